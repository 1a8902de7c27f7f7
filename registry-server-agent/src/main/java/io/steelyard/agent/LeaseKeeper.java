package io.steelyard.agent;

import static java.util.Objects.requireNonNull;

import com.google.common.base.Ticker;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.support.CloseableClient;
import io.grpc.stub.StreamObserver;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.internal.EtcdCalls;
import io.steelyard.registry.internal.EtcdErrors;
import java.time.Duration;
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
    KeptAlive kept =
        new KeptAlive(client, lease, lastAnswerNanos, serial, requireNonNull(listener, "listener"));
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
                  kept.lastAnswerNanos = ticker.read(); // no hop: one volatile write per answer
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
                    Long.toHexString(lease), who, ttlSeconds, message(t));
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
                logger.debug("Revoking stale lease {} failed: {}", Long.toHexString(lease), message(t));
              }
            });
  }

  static String message(Throwable t) {
    Throwable c = EtcdErrors.unwrap(t);
    return c instanceof RegistryException ? c.getMessage() : String.valueOf(c);
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
    @Nullable private CloseableClient stream;
    @Nullable private Future<?> check;
    /** The lastAnswerNanos for which silence was reported; a later answer re-arms the alarm. */
    private long silentAt = Long.MIN_VALUE;
    private boolean done;

    private KeptAlive(
        Client client, long lease, long lastAnswerNanos, Executor serial, Listener listener) {
      this.client = client;
      this.lease = lease;
      this.lastAnswerNanos = lastAnswerNanos;
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
      long silenceAt = silentFrom + silenceNanos(ttlSeconds);
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
          Long.toHexString(lease), who, message(t));
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
