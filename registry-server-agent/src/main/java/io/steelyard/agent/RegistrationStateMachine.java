package io.steelyard.agent;

import static com.google.common.base.Preconditions.checkState;
import static java.util.Objects.requireNonNull;

import com.google.common.base.Ticker;
import com.google.common.util.concurrent.MoreExecutors;
import io.etcd.jetcd.Client;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.internal.Backoff;
import io.steelyard.registry.internal.EtcdCalls;
import io.steelyard.registry.internal.RetryPolicy;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The state machine behind a {@link ServiceRegistration} ({@link RegistrationState} draws the
 * transitions): acquire the lease and put the key, recovery after a lost lease, an operator's
 * delete, close. The lease and its keepalive are {@link LeaseShare}'s (a private one, or a {@link
 * SharedLease}'s), one attempt to register {@link RegistrationAttempt}'s, when to try again
 * {@link RegistrationRetry}'s (the one {@link io.steelyard.registry.internal.RetryPolicy}), the
 * guarded writes of the key {@link OwnKey}'s, the watch of the key {@link KeyWatch}'s, judging what
 * the watch says (our write, an operator's, a key gone, etcd gone back in time) {@link KeyJudge}'s,
 * the weight wanted and its writes {@link WeightWrites}'s (with the weight source's decisions,
 * {@link WeightPublisher}'s); this class holds the per-key state and decides.
 *
 * <p>Threading: every field marked "serial" is touched only on {@link #serial}, a sequential
 * executor over the scheduler shared by all registrations. etcd answers, lease, watch and timer
 * callbacks only post work to it, and no task waits for etcd, so one thread serves any number of
 * registrations. Volatile fields are read by any thread.
 */
final class RegistrationStateMachine implements LeaseShare.User {

  /** Kept from the close budget for the last steps after the revokes. */
  private static final Duration CLOSE_MARGIN = Duration.ofMillis(100);

  private static final Logger logger = LoggerFactory.getLogger(RegistrationStateMachine.class);

  private final String key;
  private final RegistrationValue value;
  private final Duration operationTimeout;
  private final Duration closeTimeout;
  private final LeaseShare share;
  private final boolean ownsShare;
  private final OwnKey ownKey;
  private final ScheduledExecutorService scheduler;
  private final Executor serial;
  private final Ticker ticker;
  private final Backoff backoff;
  private final RegistrationRetry retry;
  private final EtcdCalls calls;
  private final String who;
  private final WeightWrites weights;
  private final KeyJudge judge;

  private final StatePublisher states;
  private final CompletableFuture<Void> closed = new CompletableFuture<>();
  private final AtomicBoolean started = new AtomicBoolean();
  private final AtomicBoolean closing = new AtomicBoolean();
  private final AtomicBoolean finished = new AtomicBoolean();

  /** The live lease holding the key; 0 unless REGISTERED. Written only on serial. */
  private volatile long leaseId;
  private volatile long closeStartNanos;
  // serial: whether the key was ever registered (a refusal then falls back to RECOVERING)
  private boolean registeredOnce;

  // serial: bumped whenever the lease's watch is dropped, to ignore its late work
  private long generation;
  // serial
  @Nullable private KeyWatch watch;
  /** serial: the pending retry of a registration, key-gone check or re-assert; at most one. */
  @Nullable private Future<?> timer;
  private final RegistrationAttempt attempt;

  RegistrationStateMachine(ServiceRegistrationBuilder b, LeaseShare share, boolean ownsShare) {
    this.key = b.layout.instanceKey(b.service, b.address);
    this.ownKey = new OwnKey(b.layout, b.service, b.address);
    this.value = new RegistrationValue(b.service, b.address, b.metadata, b.effectiveFormat());
    this.operationTimeout = b.operationTimeout;
    this.closeTimeout = b.closeTimeout;
    this.share = share;
    this.ownsShare = ownsShare;
    this.scheduler = b.scheduler;
    this.serial = MoreExecutors.newSequentialExecutor(b.scheduler);
    this.ticker = b.ticker;
    this.backoff = RegistrationDefaults.backoff(b.retryInitialDelay, b.retryMaxDelay, b.random);
    this.calls = new EtcdCalls(b.operationTimeout, scheduler::schedule);
    this.who = b.service + " at " + b.address;
    this.states = new StatePublisher(who, b.listeners);
    this.retry = new RegistrationRetry(who, key, backoff);
    this.attempt = new RegistrationAttempt(share, this, ownKey, calls, serial, closing::get);
    Parts parts = new Parts();
    this.weights = new WeightWrites(b, serial, calls, backoff, who, parts);
    this.judge = new KeyJudge(ownKey, calls, serial, weights, parts);
  }

  // ---- called by ServiceRegistration, on any thread ----

  CompletableFuture<Void> start() {
    checkState(!closing.get(), "registration of %s is closed", who);
    if (started.compareAndSet(false, true)) {
      post(
          () -> {
            if (!closing.get()) {
              weights.start();
              states.set(RegistrationState.REGISTERING);
              tryRegister();
            }
          });
    }
    return registered();
  }

  CompletableFuture<Void> registered() {
    if (states.state() == RegistrationState.REGISTERED) {
      return CompletableFuture.completedFuture(null); // also after a refusal that was fixed
    }
    return states.firstRegistered();
  }

  /** Why etcd refused the registration, while REFUSED. */
  Optional<RegistryException> refusal() {
    return states.state() == RegistrationState.REFUSED
        ? Optional.ofNullable(retry.refusal())
        : Optional.empty();
  }

  CompletableFuture<Void> reregister() {
    checkState(!closing.get(), "registration of %s is closed", who);
    checkState(started.get(), "registration of %s was never started", who);
    CompletableFuture<Void> f = new CompletableFuture<>();
    post(
        () -> {
          if (closing.get()) {
            f.completeExceptionally(closedException());
          } else if (states.state() == RegistrationState.REGISTERED) {
            f.complete(null);
          } else {
            states.awaitRegistered(f);
            RegistrationState now = states.state();
            if (now == RegistrationState.DELETED_BY_OPERATOR || now == RegistrationState.REFUSED) {
              logger.info("Registering {} again, as asked", who);
              if (now == RegistrationState.REFUSED) {
                cancelTimer(); // the slow retry of a refusal: try now instead
              }
              retry.startOver();
              states.set(RegistrationState.REGISTERING);
              tryRegister();
            }
          }
        });
    return f;
  }

  CompletableFuture<Void> setWeight(int newWeight) {
    checkState(!closing.get(), "registration of %s is closed", who);
    CompletableFuture<Void> done = new CompletableFuture<>();
    if (!post(() -> weights.set(newWeight, done))) {
      done.completeExceptionally(closedException());
    }
    return done;
  }

  void resumeWeightSource() {
    checkState(weights.hasSource(), "registration of %s has no weight source", who);
    post(weights::resumeSource);
  }

  boolean weightSourcePaused() {
    return weights.sourcePaused();
  }

  void addListener(RegistrationListener listener) {
    states.addListener(requireNonNull(listener, "listener"));
    if (!post(() -> states.tellCurrent(listener))) {
      states.tellCurrent(listener);
    }
  }

  RegistrationState state() {
    return states.state();
  }

  long leaseId() {
    return leaseId;
  }

  int weight() {
    return weights.weight();
  }

  /** Starts closing (once) and returns the future of its end: key removed, client closed. */
  @Override
  public CompletableFuture<Void> closeAsync() {
    if (closing.compareAndSet(false, true)) {
      closeStartNanos = ticker.read();
      if (!post(this::doClose)) {
        finishClose();
      }
    }
    return closed;
  }

  /**
   * Ends the close from the caller's thread when the serial executor did not in time (a listener
   * that blocks it, say): state CLOSED, futures failed, an owned client closed.
   */
  void forceClosed() {
    finishClose();
    if (ownsShare) {
      share.forceClose();
    }
  }

  /** From the lease share, on its executor: hop. */
  @Override
  public void onLeaseLost(
      long lease, RecoveryCause why, String reason, @Nullable Throwable cause) {
    post(() -> leaseLost(lease, why, reason));
  }

  // ---- everything below runs on serial ----

  private void tryRegister() {
    timer = null;
    if (closing.get() || states.state() == RegistrationState.REGISTERED) {
      return;
    }
    // The attempt completes on serial: no second hop.
    attempt
        .start(weights::weight, value::encode, judge::knownModRevision)
        .whenComplete(
            (r, t) -> {
              if (closing.get()) {
                return; // doClose leaves the share, which deletes the key or revokes the lease
              }
              if (t != null) {
                onAttemptFailed(t);
              } else {
                onRegistered(r.lease(), r.revision(), r.weight());
              }
            });
  }

  /**
   * The attempt failed: retry as the policy says ({@link RegistrationRetry}). A refusal puts the
   * registration in REFUSED (its first future fails with the reason); an attempt that fails
   * otherwise after a refusal leaves REFUSED.
   */
  private void onAttemptFailed(Throwable t) {
    RetryPolicy.Decision d = retry.attemptFailed(t);
    if (d.refused()) {
      states.refuse(d.error());
    } else if (states.state() == RegistrationState.REFUSED) {
      states.set(registeredOnce ? RegistrationState.RECOVERING : RegistrationState.REGISTERING);
    }
    if (d.renewClient()) {
      share.renew(client());
    }
    timer = schedule(this::tryRegister, d.delayNanos());
  }

  private void onRegistered(long lease, long putRevision, int w) {
    registeredOnce = true;
    retry.registered();
    leaseId = lease;
    judge.registered(putRevision);
    long gen = ++generation;
    share.written(this, lease);
    watch =
        new KeyWatch(
            share::client, ownKey.bytes(), key, calls, serial, scheduler, backoff,
            judge.watchListener(gen));
    watch.start(putRevision);
    logger.info(
        "Registered {} in etcd as {} with weight {} (lease {}, ttl {}s)",
        who, key, w, Long.toHexString(lease), share.ttlSeconds());
    states.set(RegistrationState.REGISTERED);
    weights.onRegistered(w);
    if (share.leaseId() != lease) {
      // The lease was lost while the put was on its way: register again at once.
      // The share told us why while the lease was not ours yet; ask it again.
      RecoveryCause why = share.lossCause(lease);
      leaseLost(
          lease,
          why != null ? why : RecoveryCause.LEASE_EXPIRED,
          "the lease was lost while the key was being written");
    }
  }

  /** etcd says {@code lease} lives although its key went: an operator deregistered it. */
  private void deletedByOperator(long lease) {
    logger.warn(
        "Key {} was deleted while lease {} is alive: an operator deregistered {}; not writing it"
            + " back until reregister()",
        key, Long.toHexString(lease), who);
    dropWatch();
    leaseId = 0;
    // A lease of our own is revoked now, useless; a shared one stays for the others.
    share.leave(this, null, operationTimeout);
    states.set(RegistrationState.DELETED_BY_OPERATOR);
  }

  private void leaseLost(long lease, RecoveryCause why, String reason) {
    if (lease != leaseId || closing.get() || states.state() != RegistrationState.REGISTERED) {
      return;
    }
    logger.info(
        "Registering {} again: lease {} lost ({}, {})", who, Long.toHexString(lease), why.tag(), reason);
    dropWatch();
    leaseId = 0;
    retry.startOver();
    states.recover(why);
    tryRegister();
  }

  /** Stops the current lease's watch and pending retry; their late work is ignored. */
  private void dropWatch() {
    generation++;
    cancelTimer();
    weights.dropped();
    if (watch != null) {
      watch.close();
      watch = null;
    }
  }

  /**
   * Runs {@code task} on serial after the key-gone and re-assert backoff (the pending {@link
   * #timer}); returns the delay.
   */
  private long retryLater(Runnable task) {
    long delayNanos = retry.checkDelayNanos();
    timer = schedule(() -> {
      timer = null;
      task.run();
    }, delayNanos);
    return delayNanos;
  }

  private void cancelTimer() {
    if (timer != null) {
      timer.cancel(false);
      timer = null;
    }
  }

  private void doClose() {
    cancelTimer();
    attempt.cancel();
    dropWatch();
    weights.close();
    Duration left =
        closeTimeout.minusNanos(ticker.read() - closeStartNanos).minus(CLOSE_MARGIN);
    // Our key goes: by a guarded delete when others keep the lease, with the lease otherwise.
    boolean wasStarted = started.get() && states.state() != RegistrationState.DELETED_BY_OPERATOR;
    CompletableFuture<Void> left1 =
        wasStarted ? share.leave(this, ownKey, left) : CompletableFuture.completedFuture(null);
    left1.whenCompleteAsync((v, t) -> finishClose(), serial);
  }

  /** The end of close, once: CLOSED, waiters failed, an owned client closed. */
  private void finishClose() {
    if (!finished.compareAndSet(false, true)) {
      return;
    }
    leaseId = 0;
    states.close(closedException());
    if (ownsShare) {
      share.close(Duration.ZERO).whenComplete((v, t) -> closed.complete(null));
    } else {
      closed.complete(null);
    }
  }

  private Client client() {
    return share.client();
  }

  /** Runs {@code task} on serial after {@code delayNanos}, unless cancelled first. */
  private Future<?> schedule(Runnable task, long delayNanos) {
    Runnable hop = () -> post(task);
    return scheduler.schedule(hop, delayNanos, TimeUnit.NANOSECONDS);
  }

  private boolean post(Runnable task) {
    return RegistrationScheduler.post(serial, task, logger, "registration", who);
  }


  private CancellationException closedException() {
    return new CancellationException("registration of " + who + " closed");
  }

  @Override
  public String toString() {
    long lease = leaseId;
    return who + ", " + states.state() + (lease != 0 ? ", lease " + Long.toHexString(lease) : "");
  }

  /** What the weight writes and the judge of etcd's news see of the registration; on serial. */
  private final class Parts implements WeightWrites.Registration, KeyJudge.Registration {
    @Override
    public boolean registered() {
      return states.state() == RegistrationState.REGISTERED && !closing.get();
    }

    @Override
    public boolean closing() {
      return closing.get();
    }

    @Override
    public RegistrationState state() {
      return states.state();
    }

    @Override
    public long generation() {
      return generation;
    }

    @Override
    public long leaseId() {
      return leaseId;
    }

    @Override
    public Client client() {
      return RegistrationStateMachine.this.client();
    }

    @Override
    public long knownModRevision() {
      return judge.knownModRevision();
    }

    @Override
    public void renewClient() {
      share.renew(client());
    }

    @Override
    public void ownWriteStarted() {
      judge.ownWriteStarted();
    }

    @Override
    public void ownWriteAnswered(long gen, long revision, boolean conflicted) {
      judge.ownWriteAnswered(gen, revision, conflicted);
    }

    @Override
    public Future<?> schedule(Runnable task, long delayNanos) {
      return RegistrationStateMachine.this.schedule(task, delayNanos);
    }

    @Override
    public CancellationException closedException() {
      return RegistrationStateMachine.this.closedException();
    }

    @Override
    public byte[] encode(int w) {
      return value.encode(w);
    }

    @Override
    public void keyAnswered() {
      retry.keyAnswered();
    }

    @Override
    public long retryLater(Runnable task) {
      return RegistrationStateMachine.this.retryLater(task);
    }

    @Override
    public void leaseGone(long lease, RecoveryCause why, String reason) {
      share.reportLost(lease, why, reason);
      leaseLost(lease, why, reason);
    }

    @Override
    public void deletedByOperator(long lease) {
      RegistrationStateMachine.this.deletedByOperator(lease);
    }
  }
}
