package io.steelyard.agent;

import io.etcd.jetcd.Client;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.internal.Backoff;
import io.steelyard.registry.internal.EtcdCalls;
import io.steelyard.registry.internal.EtcdErrors;
import io.steelyard.registry.internal.RetryPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A registration's weight: the one it wants in etcd (the last set by the application, remembered
 * while not registered, adopted from an operator, or sampled from its {@link WeightSource}), the
 * one etcd holds as far as it knows, and the writes that bring etcd from one to the other.
 *
 * <p><b>The rule</b> ({@link #queueWrite}): once registered, etcd is brought to the wanted weight
 * by one write at a time, in the order asked. A write waiting for its turn carries whatever weight
 * is wanted when the turn comes, and answers every {@code setWeight} queued behind it. Why one at
 * a time: two writes in flight read the same revision and guard on it, so the registration's own
 * later write failed as a conflict and its weight was never written; and their order in etcd was
 * not the order asked. A weight set while not registered is only remembered and acknowledged at
 * once; the registration writes it ({@link #onRegistered}). Both were found by the LoadHeld
 * benchmark through etcd's gRPC proxy (docs/agent.md, "Weight updates").
 *
 * <p>Each write goes through the registration's own key path ({@link OwnKey#writeWeight}): the
 * registration's value with the new weight, on its lease, guarded by the mod revision it already
 * holds, in one transaction that also removes a drain note. When etcd could not be reached,
 * the wanted weight is written again with backoff (see {@link #retryLater}).
 *
 * <p>Threading: confined to the registration's serial executor, except {@link #weight()} and
 * {@link #sourcePaused()}, read by any thread.
 */
final class WeightWrites {

  /** What the weight writes need of their registration; called on the serial executor. */
  interface Registration {
    /** Whether a write goes to etcd now: REGISTERED and not closing. */
    boolean registered();

    boolean closing();

    RegistrationState state();

    /** Bumped whenever the lease's watch is dropped; work of an older one is ignored. */
    long generation();

    long leaseId();

    Client client();

    /** The key's mod revision as the registration knows it: the guard of a weight write. */
    long knownModRevision();

    /** The registration's value with weight {@code w}. */
    byte[] encode(int w);

    /** Replaces the client after failed writes, as a failed registration attempt does. */
    void renewClient();

    /** One of our writes of the key leaves: events meanwhile are judged once it is answered. */
    void ownWriteStarted();

    /**
     * It was answered: at mod revision {@code revision}, or {@code 0} when it failed; {@code
     * conflicted} when its guard failed (someone else wrote).
     */
    void ownWriteAnswered(long gen, long revision, boolean conflicted);

    /** Runs {@code task} on serial after {@code delayNanos}, unless cancelled first. */
    Future<?> schedule(Runnable task, long delayNanos);

    CancellationException closedException();
  }

  private static final Logger logger = LoggerFactory.getLogger(WeightWrites.class);

  private final String who;
  private final OwnKey ownKey;
  private final EtcdCalls calls;
  private final RetryPolicy retries;
  private final Executor serial;
  private final Registration reg;
  @Nullable private final WeightPublisher source;

  /** The weight wanted: written on the next registration, and brought to etcd once registered. */
  private volatile int weight;
  /** serial: the weight etcd holds for the key as far as we know (what we wrote or adopted). */
  private int etcdWeight;
  /** serial: the pending rewrite of a weight etcd could not be reached for; at most one. */
  @Nullable private Future<?> retry;
  /** serial: answered once the last write queued is; each write waits for the one before. */
  private CompletableFuture<Void> tail = CompletableFuture.completedFuture(null);
  /** serial: a write of the wanted weight is queued, not yet started (it takes the waiters). */
  private boolean queued;
  /** serial: setWeight futures answered by the next write of the wanted weight. */
  private final List<CompletableFuture<Void>> waiters = new ArrayList<>();
  /**
   * serial: weights of our writes that etcd did not answer in time since the last one it did: each
   * may still land (see {@link #judge}).
   */
  private final Set<Integer> unanswered = new HashSet<>();

  WeightWrites(
      ServiceRegistrationBuilder b, Executor serial, EtcdCalls calls, Backoff backoff, String who,
      Registration reg) {
    this.who = who;
    // OwnKey holds no state: this one and the state machine's write the same key the same way.
    this.ownKey = new OwnKey(b.layout, b.service, b.address);
    this.calls = calls;
    this.retries = RegistrationDefaults.retryPolicy(backoff);
    this.serial = serial;
    this.reg = reg;
    this.weight = b.weight;
    this.source =
        b.weightSource == null
            ? null
            : new WeightPublisher(
                b.weightSource, b.weightSettings(), b.scheduler, serial, b.ticker, b.random, who,
                new Sink());
  }

  /** The weight wanted; any thread. */
  int weight() {
    return weight;
  }

  boolean hasSource() {
    return source != null;
  }

  /** Whether the weight source is paused (an operator's or the application's weight holds). */
  boolean sourcePaused() {
    return source != null && source.paused();
  }

  // ---- everything below runs on serial ----

  /** At start: the weight source's first sample, if any, is the weight the first put writes. */
  void start() {
    if (source != null) {
      weight = source.start(weight);
    }
  }

  void resumeSource() {
    if (source != null) {
      source.resume();
    }
  }

  /** Stops the weight source; nothing of it runs after. */
  void close() {
    if (source != null) {
      source.close();
    }
  }

  /** The application's setWeight: remembered at once, written in turn when registered. */
  void set(int newWeight, CompletableFuture<Void> done) {
    if (reg.closing()) {
      done.completeExceptionally(reg.closedException());
      return;
    }
    if (source != null) {
      source.pin(newWeight); // the application's explicit weight wins over its source
    }
    int old = weight;
    weight = newWeight;
    cancelRetry(); // this weight supersedes one still waiting for etcd
    retries.reset();
    if (reg.state() != RegistrationState.REGISTERED) {
      logger.info(
          "Weight of {} will be {} (was {}) once registered (now {})",
          who, newWeight, old, reg.state());
      done.complete(null);
      return;
    }
    waiters.add(done);
    queueWrite();
  }

  /**
   * The key was put with a new lease holding {@code w}. A weight set while that put was on its way
   * was acknowledged at once (only remembered), so it is written now: without this, etcd kept the
   * weight the registration started with, behind a setWeight that had completed.
   */
  void onRegistered(int w) {
    etcdWeight = w;
    unanswered.clear(); // guarded by revisions from before the put: none can land now
    if (source != null) {
      source.onRegistered(w);
    }
    if (weight != w) {
      logger.info("Weight of {} set to {} while registering; writing it", who, weight);
      queueWrite();
    }
  }

  /** etcd holds {@code w}, written by us outside these writes (the re-assertion after a restore). */
  void held(int w) {
    etcdWeight = w;
  }

  /**
   * etcd holds {@code w} under our lease, and none of our answered writes put it there. If it is
   * the weight of one of our writes that timed out, that write landed late: etcd holds it, and the
   * weight wanted is written again. Otherwise someone (the CLI, another tool) rewrote the value
   * keeping our lease: adopt its weight, so that a later re-registration writes what the operator
   * chose, and tell the source.
   *
   * <p>Why: a guarded write that etcd did not answer within the operation timeout still lands
   * when etcd gets to it, if the key still has the revision it was guarded by. Taken
   * for an operator's, it replaced the newer weight wanted (LoadHeld through a loaded proxy: 79
   * registrations ended on an older weight of their own, 4 behind an acknowledged change). The
   * price: an operator who writes exactly such a weight while it is unanswered is overwritten.
   */
  void judge(int w) {
    if (w == etcdWeight) {
      return;
    }
    if (unanswered.contains(w)) {
      logger.info(
          "Weight of {}: our write of {} that etcd did not answer in time landed; writing {} again",
          who, w, weight);
      etcdWeight = w;
      if (weight != w && reg.registered()) {
        cancelRetry(); // etcd answers again: no need to wait for the backoff
        queueWrite();
      }
      return;
    }
    if (!waiters.isEmpty()) {
      // A setWeight waits for its turn: the application's explicit weight is written over it,
      // as it was when each setWeight wrote at once; its future must not complete on this one.
      logger.info(
          "Weight of {} changed in etcd to {} (was {}); a setWeight({}) waiting overwrites it",
          who, w, etcdWeight, weight);
      etcdWeight = w;
      return;
    }
    if (w == 0) {
      logger.info("Drained {}: its weight in etcd is now 0 (was {}); clients send it no new calls",
          who, etcdWeight);
    } else {
      logger.info("Weight of {} changed in etcd to {} (was {})", who, w, etcdWeight);
    }
    etcdWeight = w;
    weight = w;
    if (source != null) {
      source.onForeignWeight(w);
    }
  }

  /** The lease's watch was dropped: a pending rewrite is moot (the next registration writes). */
  void dropped() {
    cancelRetry();
    retries.reset();
  }

  /**
   * Queues a write of whatever weight is wanted when its turn comes (see the class comment),
   * unless one is queued already: it carries the newer weight too.
   */
  private void queueWrite() {
    if (queued) {
      return;
    }
    queued = true;
    inTurn(this::writeWanted);
  }

  /** In its turn, after {@link #queueWrite}: the setWeight futures waiting are answered by it. */
  private CompletableFuture<?> writeWanted() {
    queued = false;
    List<CompletableFuture<Void>> carried = new ArrayList<>(waiters);
    waiters.clear();
    if (reg.closing()) {
      carried.forEach(f -> f.completeExceptionally(reg.closedException()));
      return CompletableFuture.completedFuture(null);
    }
    if (reg.state() != RegistrationState.REGISTERED) {
      carried.forEach(f -> f.complete(null)); // remembered: the next registration writes it
      return CompletableFuture.completedFuture(null);
    }
    int w = weight;
    if (carried.isEmpty() && (w == etcdWeight || retry != null)) {
      // Nothing to write, or a retry is due (it writes the weight wanted then).
      return CompletableFuture.completedFuture(null);
    }
    long gen = reg.generation();
    int old = etcdWeight;
    return writeNow(w, false).whenComplete((v, t) -> {
      if (t != null) {
        carried.forEach(f -> f.completeExceptionally(t));
        retryLater(gen, w, t);
      } else {
        retries.reset();
        logger.info("Weight of {} set to {} (was {}), lease {}", who, w, old, Long.toHexString(reg.leaseId()));
        carried.forEach(f -> f.complete(null));
      }
    });
  }

  /**
   * A write of ours failed: when etcd could not be reached (not a refusal, not a conflict), write
   * the wanted weight again with backoff, renewing the client as a registration attempt does, as
   * long as it is still the weight wanted, under the same lease, and etcd does not hold it yet. A
   * lost lease needs nothing: the next registration writes the remembered weight. Without this, a
   * weight set while the agent's connection was still coming back (just after an outage or a
   * restore) would stay unwritten for as long as the lease lives.
   */
  private void retryLater(long gen, int w, Throwable t) {
    if (!RetryPolicy.classify(t).unreachable() || !stillWanted(gen, w)) {
      return;
    }
    RetryPolicy.Decision d = retries.failed("write weight " + w + " of " + who, t);
    if (d.renewClient()) {
      reg.renewClient();
    }
    long delayMillis = TimeUnit.NANOSECONDS.toMillis(d.delayNanos());
    if (d.failures() % 10 == 1) { // the first and every tenth: an outage must not flood the log
      logger.info(
          "Could not write weight {} of {} (attempt {}); writing it again in {} ms: {}",
          w, who, d.failures(), delayMillis, EtcdErrors.message(t));
    } else {
      logger.debug(
          "Could not write weight {} of {} (attempt {}); writing it again in {} ms: {}",
          w, who, d.failures(), delayMillis, EtcdErrors.message(t));
    }
    cancelRetry();
    retry = reg.schedule(() -> rewrite(gen), d.delayNanos());
  }

  private void rewrite(long gen) {
    retry = null;
    if (gen == reg.generation()) {
      queueWrite();
    }
  }

  private boolean stillWanted(long gen, int w) {
    return gen == reg.generation() && reg.registered() && weight == w && etcdWeight != w;
  }

  private void cancelRetry() {
    if (retry != null) {
      retry.cancel(false);
      retry = null;
    }
  }

  /**
   * Runs {@code write} on serial once every write queued before it is answered; the next one
   * waits for the future it returns (the write's answer).
   */
  private void inTurn(Supplier<CompletableFuture<?>> write) {
    CompletableFuture<Void> turn = new CompletableFuture<>();
    CompletableFuture<Void> previous = tail;
    tail = turn;
    previous.whenCompleteAsync(
        (v, t) -> {
          CompletableFuture<?> answered = CompletableFuture.completedFuture(null);
          try {
            answered = write.get();
          } finally {
            answered.whenComplete((v2, t2) -> turn.complete(null));
          }
        },
        serial);
  }

  /** The weight source's write of {@code w}, in its turn. Completes on serial. */
  private CompletableFuture<Void> writeFromSource(int w) {
    CompletableFuture<Void> done = new CompletableFuture<>();
    inTurn(
        () -> {
          if (reg.closing()) {
            done.completeExceptionally(reg.closedException());
          } else if (reg.state() != RegistrationState.REGISTERED) {
            if (!sourcePaused()) {
              weight = w; // remembered, as a sample taken while not registered is
            }
            done.complete(null);
          } else {
            writeNow(w, true).whenComplete((v, t) -> {
              if (t != null) {
                done.completeExceptionally(t);
              } else {
                done.complete(null);
              }
            });
          }
          return done;
        });
    return done;
  }

  /**
   * Writes {@code w} through the registration's own key path ({@link OwnKey#writeWeight}): one
   * transaction guarded by the key's mod revision as the registration knows it, no read first.
   * With {@code onlyIfUnchanged} (the weight source's writes), it writes only if etcd still holds
   * the weight we know of: a weight someone else wrote is never overwritten by a source. Only in
   * its turn ({@link #inTurn}). Completes on serial.
   */
  private CompletableFuture<Void> writeNow(int w, boolean onlyIfUnchanged) {
    int expected = etcdWeight;
    reg.ownWriteStarted();
    CompletableFuture<Long> write =
        ownKey.writeWeight(
            calls, reg.client(), reg.encode(w), reg.leaseId(), reg.knownModRevision(),
            onlyIfUnchanged ? OptionalInt.of(expected) : OptionalInt.empty());
    CompletableFuture<Void> done = new CompletableFuture<>();
    long gen = reg.generation();
    write.whenCompleteAsync(
        (r, t) -> {
          long revision = 0;
          if (t != null && EtcdErrors.classify(t) == RegistryException.Kind.UNAVAILABLE) {
            unanswered.add(w); // it may still land (see judge)
          }
          if (t == null) {
            // Each unanswered write was guarded by an older revision than this one: none can land now.
            unanswered.clear();
          }
          if (t == null && !reg.closing()) {
            revision = r;
            etcdWeight = w;
            if (onlyIfUnchanged && !sourcePaused()) {
              weight = w; // setWeight set it before writing; a source's weight counts once written
            }
          }
          reg.ownWriteAnswered(
              gen, revision, t != null && EtcdErrors.classify(t) == RegistryException.Kind.CONFLICT);
          if (t == null && weight != etcdWeight && retry == null && reg.registered()) {
            // A write answered late (from before a re-registration, say) left etcd behind the
            // weight wanted: bring it there.
            queueWrite();
          }
          if (t != null) {
            done.completeExceptionally(EtcdErrors.unwrap(t));
          } else if (reg.closing()) {
            done.completeExceptionally(reg.closedException());
          } else {
            done.complete(null);
          }
        },
        serial);
    return done;
  }

  /** What the weight source writes through; on serial. */
  private final class Sink implements WeightPublisher.Sink {
    @Override
    public int weight() {
      return reg.state() == RegistrationState.REGISTERED ? etcdWeight : weight;
    }

    @Override
    public boolean registered() {
      return reg.registered();
    }

    @Override
    public CompletableFuture<Void> publish(int w) {
      int old = etcdWeight;
      return writeFromSource(w)
          .thenRun(() -> logger.info("Weight of {} set to {} by its weight source (was {})", who, w, old));
    }

    @Override
    public void remember(int w) {
      weight = w;
    }
  }
}
