package io.steelyard.agent;

import static java.util.Objects.requireNonNull;

import com.google.common.annotations.VisibleForTesting;
import com.google.common.base.Ticker;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.support.CloseableClient;
import io.grpc.stub.StreamObserver;
import io.steelyard.registry.internal.EtcdCalls;
import io.steelyard.registry.internal.EtcdErrors;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The lease mechanism: grants a lease of the TTL, keeps it alive and says when it goes silent and
 * when it is lost, revokes it. Who uses which lease, and what to do about silence or loss, is
 * {@link LeaseShare}'s.
 *
 * <p><b>Lease loss</b>, as jetcd reports it and as the clock says: the keepalive answers a TTL
 * &le; 0 or NOT_FOUND (etcd no longer has the lease); no answer came within the TTL of the last
 * one (etcd expires a lease a TTL after the last keepalive it received, which is before our last
 * answer, so by then it is gone or about to be); or jetcd ends the keepalive with {@code
 * onCompleted}, which it does on its own clock at about the same moment. Any other keepalive error
 * is a broken stream that jetcd reopens itself after 500 ms; it is logged, not acted on.
 *
 * <p><b>Silence</b>: jetcd keeps every lease of a client on one keepalive stream and asks again a
 * third of the TTL after each answer (on a 500 ms tick). When the member under that stream goes
 * silent (partitioned: connection open, nothing answers), jetcd keeps the stream there until
 * gRPC's keepalive closes the connection, 10 s + 5 s later, long after a short lease expired. So
 * an answer that is {@linkplain #silenceNanos later than expected} is reported as silence, well
 * inside the TTL, for the caller to move the keepalive to a fresh connection.
 *
 * <p><b>Late answers are learned</b>, not mistaken for silence. etcd's gRPC proxy (3.4) keeps each
 * lease alive through its own etcd client, on that client's rhythm (every TTL/3 after its last
 * answer, on its own 500 ms tick), and answers the requests pending from us only when its own
 * renewal is answered; an answer that finds no request pending is dropped. When our request
 * arrives just after the proxy's renewal went out, it waits for the next one: through a proxy
 * many answers come a further TTL/3 late (at TTL 15 s all of them, depending on the phase of the
 * two ticks: {@code scripts/bench-keepalive --gaps}, docs/operations.md), gaps of 2&middot;TTL/3
 * and up to 2&middot;TTL/3 + 1 s, past the fixed threshold. So the threshold follows the lateness
 * of this lease's recent answers (how long after jetcd asked an answer came): {@link
 * #silenceNanos(long, long)}. Until {@value #LATENESS_SAMPLES} answers have shown it, the
 * lateness is unknown and the threshold is the cap, which leaves time to move before the TTL runs
 * out; answers on time (directly, within milliseconds of the ask) bring it down to the fixed
 * threshold after about three TTLs, and one late answer among the last {@value
 * #LATENESS_SAMPLES} keeps it up. A silent member stops answering altogether, so it teaches
 * nothing, and its silence is reported by the cap at the latest.
 *
 * <p>Threading: every callback of a {@link KeptAlive} runs on the serial executor it was created
 * with. No method blocks. Time is read from the injected {@link Ticker} and timers run on the
 * injected scheduler, so silence and loss are deterministic under a fake clock.
 */
final class LeaseKeeper {

  /** Told about a kept-alive lease, on the serial executor. */
  interface Listener {
    /** No answer for {@link #silenceNanos}; at most once per silent period of a {@link KeptAlive}. */
    void onSilent(KeptAlive kept);

    /** The lease is lost; once, and nothing after it. */
    void onLost(KeptAlive kept, RecoveryCause why, String reason, @Nullable Throwable cause);

    /** The stream broke with an error jetcd retries itself (not NOT_FOUND). */
    void onBroken(KeptAlive kept, Throwable error);
  }

  /** jetcd's keepalive sender checks every this often whether a lease is due. */
  private static final long JETCD_TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(500);
  /** The least time an answer may take after jetcd asked before it counts as silence. */
  private static final long MIN_ANSWER_ALLOWANCE_NANOS = TimeUnit.MILLISECONDS.toNanos(500);
  /** The least time a learned threshold leaves before the TTL, to move to a fresh connection. */
  private static final long MIN_MOVE_TIME_NANOS = TimeUnit.MILLISECONDS.toNanos(1_500);
  /**
   * How many recent answers' lateness the threshold learns from, and how many must be known
   * before it goes below the cap: 3 to 5 TTLs' worth. Through a proxy a few answers in a row can
   * come on time (measured: the first two of a lease, now and then), so two were too few.
   */
  static final int LATENESS_SAMPLES = 8;
  /** A lateness not known yet: too few answers on this stream and none carried over. */
  static final long UNKNOWN_LATENESS = -1;

  private static final Logger logger = LoggerFactory.getLogger(LeaseKeeper.class);

  private final long ttlSeconds;
  private final Duration operationTimeout;
  private final EtcdCalls calls;
  private final EtcdCalls.Timer timer;
  private final ScheduledExecutorService scheduler;
  private final Ticker ticker;
  private final String who;

  LeaseKeeper(
      long ttlSeconds,
      Duration operationTimeout,
      ScheduledExecutorService scheduler,
      Ticker ticker,
      String who) {
    this.ttlSeconds = ttlSeconds;
    this.operationTimeout = operationTimeout;
    this.scheduler = scheduler;
    this.timer = scheduler::schedule;
    this.calls = new EtcdCalls(operationTimeout, timer);
    this.ticker = ticker;
    this.who = who;
  }

  long ttlSeconds() {
    return ttlSeconds;
  }

  /**
   * How long after the last answer a keepalive counts as silent: when jetcd asks again (a third of
   * the TTL, plus its 500 ms tick) plus an allowance for the answer of a sixth of the TTL, at
   * least 500 ms; that is {@code max(TTL/2, TTL/3 + 0.5 s) + 0.5 s}. TTL 5 s: 3.0 s, leaving 2 s
   * to reach a healthy member; TTL 10 s: 5.5 s; TTL 2 s: 1.67 s. A false alarm costs one fresh
   * connection, never the lease.
   */
  static long silenceNanos(long ttlSeconds) {
    long ttlNanos = TimeUnit.SECONDS.toNanos(ttlSeconds);
    return Math.max(ttlNanos / 2, ttlNanos / 3 + MIN_ANSWER_ALLOWANCE_NANOS) + JETCD_TICK_NANOS;
  }

  /**
   * The silence threshold of a lease whose recent answers came up to {@code latenessNanos} after
   * jetcd asked ({@link #UNKNOWN_LATENESS}: not known yet): when jetcd asks (TTL/3 + its tick)
   * plus one and a half times that lateness, never below {@link #silenceNanos(long)} and never
   * above {@link #maxSilenceNanos}, which is also the threshold while the lateness is unknown.
   * Through a 3.4 gRPC proxy the lateness is about TTL/3 (an answer waits for the proxy's next
   * renewal), so the threshold stays at the cap.
   */
  static long silenceNanos(long ttlSeconds, long latenessNanos) {
    if (latenessNanos < 0) {
      return maxSilenceNanos(ttlSeconds);
    }
    long ttlNanos = TimeUnit.SECONDS.toNanos(ttlSeconds);
    long learned = ttlNanos / 3 + JETCD_TICK_NANOS + latenessNanos + latenessNanos / 2;
    return Math.min(Math.max(silenceNanos(ttlSeconds), learned), maxSilenceNanos(ttlSeconds));
  }

  /**
   * The most a learned threshold may grow to: the TTL less a sixth of it, or less 1.5 s at least,
   * the time left to reach a fresh connection; never below {@link #silenceNanos(long)}. TTL 5 s:
   * 3.5 s; TTL 10 s: 8.33 s; TTL 15 s: 12.5 s; TTL 4 s and less: the fixed threshold. Through a
   * 3.4 gRPC proxy answers come up to 2&middot;TTL/3 + 1 s apart, within the cap from TTL 8 s on.
   */
  static long maxSilenceNanos(long ttlSeconds) {
    long ttlNanos = TimeUnit.SECONDS.toNanos(ttlSeconds);
    long moveTime = Math.max(MIN_MOVE_TIME_NANOS, ttlNanos / 6);
    return Math.max(silenceNanos(ttlSeconds), ttlNanos - moveTime);
  }

  /**
   * How late an answer came, {@code gapNanos} after the previous one on the same stream: past
   * when jetcd asked (a third of the TTL after the previous answer, on its next tick), or 0. An
   * answer sooner than a third of the TTL answers a request jetcd repeated while waiting (a proxy
   * answers them all at once): it says nothing about lateness, so -1.
   */
  static long latenessNanos(long ttlSeconds, long gapNanos) {
    long askNanos = TimeUnit.SECONDS.toNanos(ttlSeconds) / 3;
    if (gapNanos < askNanos) {
      return -1;
    }
    return Math.max(0, gapNanos - askNanos - JETCD_TICK_NANOS);
  }

  /** Grants a lease of the TTL; bounded by the operation timeout, also on etcd's side. */
  CompletableFuture<LeaseGrantResponse> grant(Client client) {
    return calls.call(
        "grant a lease",
        () ->
            client.getLeaseClient()
                .grant(ttlSeconds, operationTimeout.toMillis(), TimeUnit.MILLISECONDS));
  }

  /**
   * Keeps {@code lease} alive over {@code client} until the returned handle is closed or the lease
   * is lost. {@code lastAnswerNanos} (by the ticker) is when etcd last confirmed the lease: its
   * grant, or the last answer on a stream this one replaces. Callbacks run on {@code serial}.
   */
  KeptAlive keepAlive(
      Client client, long lease, long lastAnswerNanos, Executor serial, Listener listener) {
    return keepAlive(client, lease, lastAnswerNanos, UNKNOWN_LATENESS, serial, listener);
  }

  /**
   * Like {@link #keepAlive(Client, long, long, Executor, Listener)}, for a stream that replaces
   * one whose answers came up to {@code latenessNanos} late ({@link KeptAlive#latenessNanos()},
   * perhaps {@link #UNKNOWN_LATENESS}): the new stream starts from what the old one learned.
   */
  KeptAlive keepAlive(
      Client client,
      long lease,
      long lastAnswerNanos,
      long latenessNanos,
      Executor serial,
      Listener listener) {
    KeptAlive kept =
        new KeptAlive(
            client, lease, lastAnswerNanos, latenessNanos, serial,
            requireNonNull(listener, "listener"));
    try {
      kept.stream = openStream(client, lease, serial, kept);
    } catch (RuntimeException e) {
      // jetcd throws at once for a client closed meanwhile (replaced by a fresh one, say).
      serial.execute(() -> kept.onError(e));
    }
    serial.execute(kept::arm);
    return kept;
  }

  private CloseableClient openStream(Client client, long lease, Executor serial, KeptAlive kept) {
    return client.getLeaseClient()
        .keepAlive(
            lease,
            new StreamObserver<LeaseKeepAliveResponse>() {
              @Override
              public void onNext(LeaseKeepAliveResponse r) {
                if (r.getTTL() <= 0) {
                  serial.execute(
                      () -> kept.lost(
                          RecoveryCause.LEASE_EXPIRED, "keepalive answered TTL " + r.getTTL(), null));
                } else {
                  kept.answered(ticker.read()); // no hop: jetcd delivers one answer at a time
                }
              }

              @Override
              public void onError(Throwable t) {
                serial.execute(() -> kept.onError(t));
              }

              @Override
              public void onCompleted() {
                // jetcd ends a keepalive this way when no answer came within the TTL.
                serial.execute(
                    () -> kept.lost(
                        RecoveryCause.KEEPALIVE_TIMEOUT, "no keepalive answer within the TTL", null));
              }
            });
  }

  /**
   * Revokes {@code lease} while closing, within {@code budget} (at most the operation timeout).
   * Never fails: the outcome is logged, and a lease not revoked expires within the TTL.
   */
  CompletableFuture<Void> revokeOnClose(Client client, long lease, Duration budget) {
    Duration timeout = budget.compareTo(operationTimeout) < 0 ? budget : operationTimeout;
    if (timeout.isNegative() || timeout.isZero()) {
      logger.warn(
          "No time left to revoke lease {} of {}; its keys expire within {}s",
          Long.toHexString(lease), who, ttlSeconds);
      return CompletableFuture.completedFuture(null);
    }
    return new EtcdCalls(timeout, timer)
        .call("revoke lease " + Long.toHexString(lease), () -> client.getLeaseClient().revoke(lease))
        .handle(
            (r, t) -> {
              if (t == null) {
                logger.info("Deregistered {}: revoked lease {}", who, Long.toHexString(lease));
              } else if (EtcdErrors.isLeaseNotFound(t)) {
                logger.debug("Lease {} was already gone", Long.toHexString(lease));
              } else {
                logger.warn(
                    "Could not revoke lease {} of {}; its keys expire within {}s: {}",
                    Long.toHexString(lease), who, ttlSeconds, EtcdErrors.message(t));
              }
              return null;
            });
  }

  /** Revokes a lease that holds nothing (any more) and forgets about it. */
  void revokeInBackground(Client client, long lease) {
    calls.call("revoke lease " + Long.toHexString(lease), () -> client.getLeaseClient().revoke(lease))
        .whenComplete(
            (r, t) -> {
              if (t != null && !EtcdErrors.isLeaseNotFound(t)) {
                logger.debug("Revoking stale lease {} failed: {}", Long.toHexString(lease), EtcdErrors.message(t));
              }
            });
  }

  /** One lease being kept alive over one client. Confined to its serial executor. */
  final class KeptAlive implements AutoCloseable {
    private final Client client;
    private final long lease;
    private final long startNanos;
    private final Executor serial;
    private final Listener listener;
    /** When etcd last confirmed the lease; written by jetcd's thread on every answer. */
    private volatile long lastAnswerNanos;
    /**
     * The lateness of the last {@link #LATENESS_SAMPLES} answers, a ring; written only by {@link
     * #answered}, which jetcd calls one answer at a time (its response handler is synchronized).
     */
    private final long[] lateness = new long[LATENESS_SAMPLES];
    private int next;
    private int samples;
    /** Whether an answer came on this stream yet: the first one says nothing about lateness. */
    private boolean answeredHere;
    /**
     * The largest lateness in {@link #lateness}, or {@link #UNKNOWN_LATENESS} while it holds fewer
     * than {@link #LATENESS_SAMPLES}; read by {@link #arm} on serial.
     */
    private volatile long latenessNanos;
    @Nullable private CloseableClient stream;
    @Nullable private Future<?> check;
    /** The lastAnswerNanos for which silence was reported; a later answer re-arms the alarm. */
    private long silentAt = Long.MIN_VALUE;
    private boolean done;

    private KeptAlive(
        Client client,
        long lease,
        long lastAnswerNanos,
        long latenessNanos,
        Executor serial,
        Listener listener) {
      this.client = client;
      this.lease = lease;
      this.lastAnswerNanos = lastAnswerNanos;
      if (latenessNanos >= 0) {
        // What the replaced stream learned counts as known, until this one's answers replace it.
        Arrays.fill(lateness, latenessNanos);
        samples = LATENESS_SAMPLES;
      }
      this.latenessNanos = latenessNanos < 0 ? UNKNOWN_LATENESS : latenessNanos;
      this.startNanos = ticker.read();
      this.serial = serial;
      this.listener = listener;
    }

    long lease() {
      return lease;
    }

    /** The client whose keepalive stream this is. */
    Client client() {
      return client;
    }

    long lastAnswerNanos() {
      return lastAnswerNanos;
    }

    /**
     * How late, at most, this lease's recent answers came after jetcd asked: 0 when on time,
     * {@link #UNKNOWN_LATENESS} until {@value #LATENESS_SAMPLES} answers came.
     */
    long latenessNanos() {
      return latenessNanos;
    }

    /** etcd answered at {@code nowNanos}: note when, and how late the answer was. */
    @VisibleForTesting
    void answered(long nowNanos) {
      if (answeredHere) {
        long late = LeaseKeeper.latenessNanos(ttlSeconds, nowNanos - lastAnswerNanos);
        if (late >= 0) {
          lateness[next] = late;
          next = (next + 1) % LATENESS_SAMPLES;
          samples = Math.min(samples + 1, LATENESS_SAMPLES);
          if (samples == LATENESS_SAMPLES) {
            long max = 0;
            for (long l : lateness) {
              max = Math.max(max, l);
            }
            latenessNanos = max;
          }
        }
      }
      answeredHere = true;
      lastAnswerNanos = nowNanos;
    }

    /** Checks the clock and schedules the next check: at the silence or the loss deadline. */
    private void arm() {
      check = null;
      if (done) {
        return;
      }
      long now = ticker.read();
      long last = lastAnswerNanos;
      long lossAt = last + TimeUnit.SECONDS.toNanos(ttlSeconds);
      if (now - lossAt >= 0) {
        // Silence that no move to a fresh connection cured ends here.
        lost(
            RecoveryCause.KEEPALIVE_TIMEOUT,
            "no keepalive answer for the whole TTL (" + ttlSeconds + "s)",
            null);
        return;
      }
      // Silence counts from the last answer, or from this stream's start when it replaces one.
      long silentFrom = Math.max(last, startNanos);
      long silenceAt = silentFrom + silenceNanos(ttlSeconds, latenessNanos);
      if (silentAt != last && now - silenceAt >= 0) {
        silentAt = last;
        logger.debug(
            "Keepalive of lease {} ({}) silent for {} ms",
            Long.toHexString(lease), who, TimeUnit.NANOSECONDS.toMillis(now - silentFrom));
        listener.onSilent(this);
        if (done) {
          return;
        }
      }
      long next = silentAt == last ? lossAt : Math.min(silenceAt, lossAt);
      check =
          scheduler.schedule(
              () -> serial.execute(this::arm), Math.max(0, next - now), TimeUnit.NANOSECONDS);
    }

    private void onError(Throwable t) {
      if (done) {
        return;
      }
      if (EtcdErrors.isLeaseNotFound(t)) {
        lost(RecoveryCause.LEASE_EXPIRED, "etcd no longer knows the lease", null);
        return;
      }
      // jetcd reports a broken keepalive stream to every observer but keeps the lease and reopens
      // the stream itself after 500 ms; if no answer arrives within the TTL the clock says lost.
      logger.info(
          "Keepalive stream of lease {} ({}) failed; jetcd reopens it: {}",
          Long.toHexString(lease), who, EtcdErrors.message(t));
      listener.onBroken(this, t);
    }

    private void lost(RecoveryCause why, String reason, @Nullable Throwable cause) {
      if (done) {
        return;
      }
      close();
      listener.onLost(this, why, reason, cause);
    }

    /** Stops the keepalive and its timer; later callbacks are ignored. Does not revoke. */
    @Override
    public void close() {
      done = true;
      if (check != null) {
        check.cancel(false);
        check = null;
      }
      if (stream != null) {
        stream.close();
        stream = null;
      }
    }
  }
}
