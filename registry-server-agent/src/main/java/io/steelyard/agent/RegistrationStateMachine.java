package io.steelyard.agent;

import static com.google.common.base.Preconditions.checkState;
import static java.util.Objects.requireNonNull;

import com.google.common.base.Ticker;
import com.google.common.util.concurrent.MoreExecutors;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.lease.LeaseTimeToLiveResponse;
import io.etcd.jetcd.options.LeaseOption;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.registry.ValueCodec;
import io.steelyard.registry.ValueFormat;
import io.steelyard.registry.internal.Backoff;
import io.steelyard.registry.internal.EtcdCalls;
import io.steelyard.registry.internal.EtcdErrors;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
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
 * delete, etcd restored under the key, judging etcd's news of the key, close. The lease and its
 * keepalive are {@link LeaseShare}'s (a private one, or a {@link SharedLease}'s), the guarded
 * writes of the key {@link OwnKey}'s, the watch of the key {@link KeyWatch}'s, the weight wanted
 * and its writes {@link WeightWrites}'s (with the weight source's decisions, {@link
 * WeightPublisher}'s); this class holds the per-key state and decides.
 *
 * <p>Threading: every field marked "serial" is touched only on {@link #serial}, a sequential
 * executor over the scheduler shared by all registrations. etcd answers, lease, watch and timer
 * callbacks only post work to it, and no task waits for etcd, so one thread serves any number of
 * registrations. Volatile fields are read by any thread.
 */
final class RegistrationStateMachine implements LeaseShare.User {

  /** Consecutive failed attempts after which an owned client is replaced; see RenewableClient. */
  static final int RECONNECT_AFTER_ATTEMPTS = 2;
  /** The key-gone and re-assert retry delays stop growing after this many failures. */
  static final int MAX_RETRY_BACKOFF_ATTEMPT = 10;
  /** Kept from the close budget for the last steps after the revokes. */
  private static final Duration CLOSE_MARGIN = Duration.ofMillis(100);

  private static final Logger logger = LoggerFactory.getLogger(RegistrationStateMachine.class);

  private final String service;
  private final String address;
  private final String key;
  private final ValueFormat format;
  private final Map<String, String> metadata;
  private final Duration operationTimeout;
  private final Duration closeTimeout;
  private final LeaseShare share;
  private final boolean ownsShare;
  private final OwnKey ownKey;
  private final ScheduledExecutorService scheduler;
  private final Executor serial;
  private final Ticker ticker;
  private final Backoff backoff;
  private final EtcdCalls calls;
  private final String who;
  private final WeightWrites weights;

  private final StatePublisher states;
  private final CompletableFuture<Void> closed = new CompletableFuture<>();
  private final AtomicBoolean started = new AtomicBoolean();
  private final AtomicBoolean closing = new AtomicBoolean();
  private final AtomicBoolean finished = new AtomicBoolean();

  /** The live lease holding the key; 0 unless REGISTERED. Written only on serial. */
  private volatile long leaseId;
  private volatile long closeStartNanos;
  /** Why etcd refused the last attempt, while REFUSED; else null. */
  @Nullable private volatile RegistryException refusal;
  // serial: whether the key was ever registered (a refusal then falls back to RECOVERING)
  private boolean registeredOnce;

  // serial: bumped whenever the lease's watch is dropped, to ignore its late work
  private long generation;
  // serial
  private int attempt;
  private int retryAttempt;
  private boolean warnedForeignLease;
  /** serial: the key's mod revision as last seen, the guard of the next registration put; 0 absent. */
  private long knownModRevision;
  /** serial: the highest revision of our own successful writes; older events are not news. */
  private long ownRevision;
  /** serial: our writes of the key in flight; events meanwhile are judged once they are answered. */
  private int ownWritesInFlight;
  private boolean recheckAfterOwnWrites;
  @Nullable private KeyWatch watch;
  /** serial: the pending retry of a registration, key-gone check or re-assert; at most one. */
  @Nullable private Future<?> timer;
  /** serial: the etcd call the current registration attempt waits for. */
  @Nullable private CompletableFuture<?> inFlight;

  RegistrationStateMachine(ServiceRegistrationBuilder b, LeaseShare share, boolean ownsShare) {
    this.service = b.service;
    this.address = b.address;
    this.key = b.layout.instanceKey(b.service, b.address);
    this.ownKey = new OwnKey(b.layout, b.service, b.address);
    this.format = b.effectiveFormat();
    this.metadata = Map.copyOf(b.metadata);
    this.operationTimeout = b.operationTimeout;
    this.closeTimeout = b.closeTimeout;
    this.share = share;
    this.ownsShare = ownsShare;
    this.scheduler = b.scheduler;
    this.serial = MoreExecutors.newSequentialExecutor(b.scheduler);
    this.ticker = b.ticker;
    this.backoff =
        new Backoff(b.retryInitialDelay, b.retryMaxDelay, ServiceRegistration.RETRY_JITTER, b.random);
    this.calls = new EtcdCalls(b.operationTimeout, scheduler::schedule);
    this.who = service + " at " + address;
    this.states = new StatePublisher(who, b.listeners);
    this.weights = new WeightWrites(b, serial, calls, backoff, who, new ForWeights());
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
    return states.state() == RegistrationState.REFUSED ? Optional.ofNullable(refusal) : Optional.empty();
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
              attempt = 0;
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
    CompletableFuture<Long> acquired = share.acquire(this);
    inFlight = acquired;
    acquired.whenCompleteAsync(
        (lease, t) -> {
          if (closing.get()) {
            return; // doClose cancelled the call
          }
          if (t != null) {
            onAttemptFailed(t);
            return;
          }
          Client client = client();
          int w = weights.weight(); // a weight set while the lease was granted counts
          CompletableFuture<Long> put =
              ownKey.put(calls, client, encode(w), lease, knownModRevision);
          inFlight = put;
          put.whenCompleteAsync(
              (revision, t2) -> {
                if (closing.get()) {
                  return; // doClose leaves the share, which deletes the key or revokes the lease
                }
                if (t2 != null) {
                  if (EtcdErrors.isLeaseNotFound(t2)) {
                    share.reportLost(
                        lease, RecoveryCause.LEASE_EXPIRED, "etcd refused a put with it: lease not found");
                  }
                  onAttemptFailed(t2);
                } else {
                  onRegistered(lease, revision, w);
                }
              },
              serial);
        },
        serial);
  }

  private void onAttemptFailed(Throwable t) {
    inFlight = null;
    // A refusal (permission, credentials, TLS, a limit) is not an outage: neither a quick retry
    // nor a new client fixes it, so wait the longest delay until an operator has acted.
    RegistryException failure = EtcdErrors.toRegistryException("register " + key, t);
    boolean refused = failure.kind().refused();
    long delayNanos = refused ? backoff.cappedDelayNanos() : backoff.delayNanos(attempt);
    attempt++;
    Throwable cause = EtcdErrors.unwrap(t);
    if (refused) {
      onRefused(failure, delayNanos);
    } else if (states.state() == RegistrationState.REFUSED) {
      states.set(registeredOnce ? RegistrationState.RECOVERING : RegistrationState.REGISTERING);
    }
    if (refused) {
      // onRefused logged it, once per distinct reason, in one line.
    } else if (attempt == 1 || attempt % 10 == 0) {
      logger.warn(
          "Could not register {} (attempt {}); retrying in {} ms",
          who, attempt, TimeUnit.NANOSECONDS.toMillis(delayNanos), cause);
    } else {
      logger.warn(
          "Could not register {} (attempt {}); retrying in {} ms: {}",
          who, attempt, TimeUnit.NANOSECONDS.toMillis(delayNanos), cause.getMessage());
    }
    // A new client also reads the certificate files again: after a TLS refusal (an expired
    // client certificate, say) that picks up rotated files without a restart.
    boolean renewable = !refused || failure.kind() == RegistryException.Kind.TLS;
    if (attempt >= RECONNECT_AFTER_ATTEMPTS && renewable) {
      share.renew(client());
    }
    timer = schedule(this::tryRegister, delayNanos);
  }

  /**
   * etcd said no: state REFUSED with the reason, the first registration's future fails with it,
   * and one line is logged per distinct reason (no stack trace: the message names the problem).
   */
  private void onRefused(RegistryException failure, long retryNanos) {
    RegistryException previous = refusal;
    refusal = failure;
    if (previous == null || !previous.getMessage().equals(failure.getMessage())) {
      logger.warn(
          "etcd refused to register {}: {}; trying again every {} ms in case the role or"
              + " credentials are fixed",
          who, failure.getMessage(), TimeUnit.NANOSECONDS.toMillis(retryNanos));
    } else {
      logger.debug("etcd still refuses to register {}: {}", who, failure.getMessage());
    }
    states.refuse(failure);
  }

  private void onRegistered(long lease, long putRevision, int w) {
    inFlight = null;
    registeredOnce = true;
    refusal = null;
    leaseId = lease;
    attempt = 0;
    retryAttempt = 0;
    warnedForeignLease = false;
    knownModRevision = putRevision;
    ownRevision = putRevision;
    long gen = ++generation;
    share.written(this, lease);
    watch =
        new KeyWatch(
            share::client, ownKey.bytes(), key, calls, serial, scheduler, backoff,
            new KeyWatch.Listener() {
              @Override
              public void onKeyWritten(KeyValue kv) {
                RegistrationStateMachine.this.onKeyWritten(gen, kv);
              }

              @Override
              public void onKeyGone() {
                RegistrationStateMachine.this.onKeyGone(gen);
              }

              @Override
              public void onEtcdWentBack(@Nullable KeyValue kv) {
                RegistrationStateMachine.this.onEtcdWentBack(gen, kv);
              }
            });
    watch.start(putRevision);
    logger.info(
        "Registered {} as {} with lease {} (ttl {}s, weight {})",
        who, key, Long.toHexString(lease), share.ttlSeconds(), w);
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

  private byte[] encode(int w) {
    return ValueCodec.encode(new ServiceInstance(service, address, w, metadata), format.forWeight(w));
  }

  private void onKeyWritten(long gen, KeyValue kv) {
    if (gen != generation || closing.get()) {
      return;
    }
    retryAttempt = 0;
    knownModRevision = Math.max(knownModRevision, kv.getModRevision());
    if (kv.getLease() != leaseId) {
      if (!warnedForeignLease) {
        warnedForeignLease = true;
        logger.warn(
            "Key {} was overwritten with lease {} instead of ours ({}); leaving it as it is",
            key, Long.toHexString(kv.getLease()), Long.toHexString(leaseId));
      }
      return;
    }
    if (kv.getModRevision() <= ownRevision) {
      return; // our own write, or older than it: nothing new
    }
    if (ownWritesInFlight > 0) {
      // Ours or someone else's? Known once our write is answered (see writeWeight).
      recheckAfterOwnWrites = true;
      return;
    }
    judge(kv);
  }

  /** A value under our lease that we did not write: its weight is judged by the weights. */
  private void judge(KeyValue kv) {
    if (ValueCodec.decode(kv.getValue().getBytes()) instanceof DecodedValue.Accepted a) {
      weights.judge(a.weight());
    }
  }

  /**
   * One of our writes was answered; once none is in flight, read the key if an event came
   * meanwhile or {@code conflicted} (its guard failed: someone else wrote).
   */
  private void ownWriteDone(long gen, boolean conflicted) {
    ownWritesInFlight--;
    recheckAfterOwnWrites |= conflicted;
    if (ownWritesInFlight == 0 && recheckAfterOwnWrites) {
      recheckAfterOwnWrites = false;
      recheck(gen);
    }
  }

  /** Reads the key and judges what it holds: after one of our writes was refused by its guard. */
  private void recheck(long gen) {
    if (gen != generation || closing.get() || states.state() != RegistrationState.REGISTERED) {
      return;
    }
    Client client = client();
    calls.call("get " + key, () -> client.getKVClient().get(ownKey.bytes()))
        .whenCompleteAsync(
            (r, t) -> {
              if (gen != generation || closing.get() || t != null || r.getKvs().isEmpty()) {
                return; // the watch tells about a key that is gone, or when etcd is back
              }
              KeyValue kv = r.getKvs().get(0);
              knownModRevision = Math.max(knownModRevision, kv.getModRevision());
              if (kv.getLease() == leaseId && ownWritesInFlight == 0) {
                judge(kv);
              }
            },
            serial);
  }

  /**
   * etcd went back in time under the key (restored from an older snapshot) while our lease lived
   * on: what it holds is history. Write the key as it should be (our weight, format and metadata,
   * with our lease, guarded), unless that is what it holds already.
   */
  private void onEtcdWentBack(long gen, @Nullable KeyValue kv) {
    if (gen != generation || closing.get()) {
      return;
    }
    // Revisions from before the restore mean nothing now.
    ownRevision = 0;
    knownModRevision = kv == null ? 0 : kv.getModRevision();
    int w = weights.weight();
    byte[] wanted = encode(w);
    if (kv != null && kv.getLease() == leaseId && Arrays.equals(kv.getValue().getBytes(), wanted)) {
      logger.info("etcd went back in time; {} already holds our value", key);
      weights.held(w);
      return;
    }
    logger.warn(
        "etcd went back in time (restored from an older snapshot?): {} holds {} with lease {};"
            + " writing ours again (weight {}, lease {})",
        key,
        kv == null ? "nothing" : "'" + kv.getValue().toString(java.nio.charset.StandardCharsets.UTF_8) + "'",
        kv == null ? "-" : Long.toHexString(kv.getLease()), w, Long.toHexString(leaseId));
    reassert(gen);
  }

  private void reassert(long gen) {
    timer = null;
    if (gen != generation || closing.get()) {
      return;
    }
    long lease = leaseId;
    int w = weights.weight();
    ownWritesInFlight++;
    ownKey.put(calls, client(), encode(w), lease, knownModRevision)
        .whenCompleteAsync(
            (revision, t) -> {
              if (gen != generation || closing.get()) {
                ownWritesInFlight--;
                return;
              }
              if (t == null) {
                ownRevision = Math.max(ownRevision, revision);
                knownModRevision = revision;
                weights.held(w);
              }
              ownWriteDone(gen, false);
              if (t == null) {
                retryAttempt = 0;
                logger.info(
                    "{} written again after etcd went back: weight {}, lease {}",
                    key, w, Long.toHexString(lease));
              } else if (EtcdErrors.isLeaseNotFound(t)) {
                String reason = "etcd went back in time to before the lease";
                share.reportLost(lease, RecoveryCause.LEASE_EXPIRED, reason);
                leaseLost(lease, RecoveryCause.LEASE_EXPIRED, reason);
              } else {
                long delayNanos = backoff.delayNanos(Math.min(retryAttempt++, MAX_RETRY_BACKOFF_ATTEMPT));
                logger.info(
                    "Could not write {} again after etcd went back; retrying in {} ms: {}",
                    key, TimeUnit.NANOSECONDS.toMillis(delayNanos), LeaseKeeper.message(t));
                timer = schedule(() -> reassert(gen), delayNanos);
              }
            },
            serial);
  }

  /** The key disappeared: an operator's delete if the lease lives on, else a lost lease. */
  private void onKeyGone(long gen) {
    timer = null;
    if (gen != generation || closing.get()) {
      return;
    }
    long lease = leaseId;
    Client client = client();
    calls.call(
            "ask etcd about lease " + Long.toHexString(lease),
            () -> client.getLeaseClient().timeToLive(lease, LeaseOption.DEFAULT))
        .whenCompleteAsync((r, t) -> afterKeyGone(gen, lease, r, t), serial);
  }

  private void afterKeyGone(
      long gen, long lease, @Nullable LeaseTimeToLiveResponse r, @Nullable Throwable t) {
    if (gen != generation || closing.get()) {
      return;
    }
    long ttl;
    if (t == null) {
      ttl = r.getTTL();
    } else if (EtcdErrors.isLeaseNotFound(t)) {
      ttl = -1;
    } else {
      long delayNanos = backoff.delayNanos(Math.min(retryAttempt++, MAX_RETRY_BACKOFF_ATTEMPT));
      logger.info(
          "Key {} is gone; cannot ask etcd about lease {} yet, asking again in {} ms: {}",
          key, Long.toHexString(lease), TimeUnit.NANOSECONDS.toMillis(delayNanos),
          EtcdErrors.unwrap(t).getMessage());
      timer = schedule(() -> onKeyGone(gen), delayNanos);
      return;
    }
    if (ttl > 0) {
      logger.warn(
          "Key {} was deleted while lease {} is alive: an operator deregistered {}; not writing it"
              + " back until reregister()",
          key, Long.toHexString(lease), who);
      dropWatch();
      leaseId = 0;
      knownModRevision = 0;
      // A lease of our own is revoked now, useless; a shared one stays for the others.
      share.leave(this, null, operationTimeout);
      states.set(RegistrationState.DELETED_BY_OPERATOR);
    } else {
      String reason = "the key went with its lease (revoked or expired)";
      share.reportLost(lease, RecoveryCause.KEY_LOST, reason);
      leaseLost(lease, RecoveryCause.KEY_LOST, reason);
    }
  }

  private void leaseLost(long lease, RecoveryCause why, String reason) {
    if (lease != leaseId || closing.get() || states.state() != RegistrationState.REGISTERED) {
      return;
    }
    logger.info(
        "Registering {} again: lease {} lost ({}, {})", who, Long.toHexString(lease), why.tag(), reason);
    dropWatch();
    leaseId = 0;
    attempt = 0;
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

  private void cancelTimer() {
    if (timer != null) {
      timer.cancel(false);
      timer = null;
    }
  }

  private void doClose() {
    cancelTimer();
    if (inFlight != null) {
      inFlight.cancel(true);
      inFlight = null;
    }
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

  /** What the weight writes see of the registration; on serial. */
  private final class ForWeights implements WeightWrites.Registration {
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
    public void renewClient() {
      share.renew(client());
    }

    @Override
    public void ownWriteStarted() {
      ownWritesInFlight++;
    }

    @Override
    public void ownWriteAnswered(long gen, long revision, boolean conflicted) {
      if (revision != 0) {
        ownRevision = Math.max(ownRevision, revision);
        knownModRevision = Math.max(knownModRevision, revision);
      }
      ownWriteDone(gen, conflicted);
    }

    @Override
    public Future<?> schedule(Runnable task, long delayNanos) {
      return RegistrationStateMachine.this.schedule(task, delayNanos);
    }

    @Override
    public CancellationException closedException() {
      return RegistrationStateMachine.this.closedException();
    }
  }
}
