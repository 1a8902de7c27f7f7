package io.steelyard.agent;

import static com.google.common.base.Preconditions.checkState;
import static java.util.Objects.requireNonNull;

import com.google.common.base.Ticker;
import com.google.common.util.concurrent.MoreExecutors;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.PutResponse;
import io.etcd.jetcd.lease.LeaseGrantResponse;
import io.etcd.jetcd.lease.LeaseTimeToLiveResponse;
import io.etcd.jetcd.options.LeaseOption;
import io.etcd.jetcd.options.PutOption;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.registry.ValueCodec;
import io.steelyard.registry.ValueFormat;
import io.steelyard.registry.internal.Backoff;
import io.steelyard.registry.internal.EtcdCalls;
import io.steelyard.registry.internal.EtcdErrors;
import io.steelyard.registry.internal.RenewableClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The state machine behind a {@link ServiceRegistration} ({@link RegistrationState} draws the
 * transitions): grant and put, recovery after a lost lease, an operator's delete, weight
 * updates, close. The lease itself is {@link LeaseKeeper}'s, the watch of the key {@link
 * KeyWatch}'s; this class holds the per-key state and decides.
 *
 * <p>Threading: every field marked "serial" is touched only on {@link #serial}, a sequential
 * executor over the scheduler shared by all registrations. etcd answers, keepalive and watch
 * callbacks and timers only post work to it, and no task waits for etcd, so one thread serves
 * any number of registrations. Volatile fields are read by any thread.
 */
final class RegistrationStateMachine {

  /** Consecutive failed attempts after which an owned client is replaced; see RenewableClient. */
  static final int RECONNECT_AFTER_ATTEMPTS = 2;
  /** The key-gone retry delay stops growing after this many failures. */
  private static final int MAX_KEY_GONE_BACKOFF_ATTEMPT = 10;
  /** Kept from the close budget for the last steps after the revokes. */
  private static final Duration CLOSE_MARGIN = Duration.ofMillis(100);

  private static final Logger logger = LoggerFactory.getLogger(RegistrationStateMachine.class);

  private final String service;
  private final String address;
  private final String key;
  private final ByteSequence keyBytes;
  private final KeyLayout layout;
  private final ValueFormat format;
  private final Map<String, String> metadata;
  private final Duration operationTimeout;
  private final Duration closeTimeout;
  private final RenewableClient clients;
  private final ScheduledExecutorService scheduler;
  private final Executor serial;
  private final Ticker ticker;
  private final Backoff backoff;
  private final EtcdCalls calls;
  private final LeaseKeeper leases;
  private final String who;

  private final StatePublisher states;
  private final CompletableFuture<Void> closed = new CompletableFuture<>();
  private final AtomicBoolean started = new AtomicBoolean();
  private final AtomicBoolean closing = new AtomicBoolean();
  private final AtomicBoolean finished = new AtomicBoolean();

  /** The live lease holding the key; 0 unless REGISTERED. Written only on serial. */
  private volatile long leaseId;
  /** The weight written on the next registration; updated by setWeight and by others' rewrites. */
  private volatile int weight;
  private volatile long closeStartNanos;
  /** Why etcd refused the last attempt, while REFUSED; else null. */
  @Nullable private volatile RegistryException refusal;
  // serial: whether the key was ever registered (a refusal then falls back to RECOVERING)
  private boolean registeredOnce;

  // serial: bumped whenever the lease's keepalive and watch are dropped, to ignore their late work
  private long generation;
  // serial: a lease granted but not yet holding the key
  private long pendingLeaseId;
  // serial: a lease that lost its keepalive but may still hold the key in etcd; revoked once replaced
  private long previousLeaseId;
  // serial
  private int attempt;
  private int keyGoneAttempt;
  private boolean warnedForeignLease;
  @Nullable private LeaseKeeper.KeptAlive keepAlive;
  @Nullable private KeyWatch watch;
  /** serial: the pending retry of a registration or of a key-gone check; at most one at a time. */
  @Nullable private Future<?> timer;
  /** serial: the etcd call the current registration attempt waits for. */
  @Nullable private CompletableFuture<?> inFlight;

  RegistrationStateMachine(ServiceRegistrationBuilder b, RenewableClient clients) {
    this.service = b.service;
    this.address = b.address;
    this.layout = b.layout;
    this.key = b.layout.instanceKey(b.service, b.address);
    this.keyBytes = b.layout.instanceKeyBytes(b.service, b.address);
    this.format = b.effectiveFormat();
    this.metadata = Map.copyOf(b.metadata);
    this.weight = b.weight;
    this.operationTimeout = b.operationTimeout;
    this.closeTimeout = b.closeTimeout;
    this.clients = clients;
    this.scheduler = b.scheduler;
    this.serial = MoreExecutors.newSequentialExecutor(b.scheduler);
    this.ticker = b.ticker;
    this.backoff =
        new Backoff(b.retryInitialDelay, b.retryMaxDelay, ServiceRegistration.RETRY_JITTER, b.random);
    this.calls = new EtcdCalls(b.operationTimeout, scheduler::schedule);
    this.who = service + " at " + address;
    this.leases =
        new LeaseKeeper(b.ttlSeconds, b.operationTimeout, scheduler::schedule, serial, who);
    this.states = new StatePublisher(who, b.listeners);
  }

  // ---- called by ServiceRegistration, on any thread ----

  CompletableFuture<Void> start() {
    checkState(!closing.get(), "registration of %s is closed", who);
    if (started.compareAndSet(false, true)) {
      post(
          () -> {
            if (!closing.get()) {
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
    if (!post(() -> doSetWeight(newWeight, done))) {
      done.completeExceptionally(closedException());
    }
    return done;
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
    return weight;
  }

  /** Starts closing (once) and returns the future of its end: leases revoked, client closed. */
  CompletableFuture<Void> closeAsync() {
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
   * that blocks it, say): state CLOSED, futures failed, the owned client closed.
   */
  void forceClosed() {
    finishClose();
    clients.close();
  }

  // ---- everything below runs on serial ----

  private void doSetWeight(int newWeight, CompletableFuture<Void> done) {
    if (closing.get()) {
      done.completeExceptionally(closedException());
      return;
    }
    int old = weight;
    weight = newWeight;
    if (states.state() != RegistrationState.REGISTERED) {
      logger.info(
          "Weight of {} will be {} (was {}) once registered (now {})",
          who, newWeight, old, states.state());
      done.complete(null);
      return;
    }
    InstanceStore store = new InstanceStore(client(), layout, operationTimeout);
    long lease = leaseId;
    // One bound for the read and the guarded write together.
    calls.call("set the weight of " + who, () -> store.setWeightAsync(service, address, newWeight))
        .whenCompleteAsync(
            (r, t) -> {
              if (t != null) {
                done.completeExceptionally(EtcdErrors.unwrap(t));
              } else if (closing.get()) {
                done.completeExceptionally(closedException());
              } else {
                logger.info(
                    "Weight of {} set to {} (was {}), lease {}",
                    who, newWeight, old, Long.toHexString(lease));
                done.complete(null);
              }
            },
            serial);
  }

  private void tryRegister() {
    timer = null;
    if (closing.get() || states.state() == RegistrationState.REGISTERED) {
      return;
    }
    Client client = client();
    int w = weight;
    CompletableFuture<LeaseGrantResponse> grant = leases.grant(client);
    inFlight = grant;
    grant.whenCompleteAsync(
        (granted, t) -> {
          if (closing.get()) {
            return; // doClose cancelled the call; a lease granted meanwhile expires with its TTL
          }
          if (t != null) {
            onAttemptFailed(client, 0, t);
            return;
          }
          long lease = granted.getID();
          pendingLeaseId = lease;
          PutOption withLease = PutOption.builder().withLeaseId(lease).build();
          CompletableFuture<PutResponse> put =
              calls.call(
                  "put " + key,
                  () -> client.getKVClient().put(keyBytes, ByteSequence.from(encode(w)), withLease));
          inFlight = put;
          put.whenCompleteAsync(
              (r, t2) -> {
                if (closing.get()) {
                  return; // doClose revokes pendingLeaseId
                }
                if (t2 != null) {
                  onAttemptFailed(client, lease, t2);
                } else {
                  onRegistered(client, lease, r.getHeader().getRevision(), w);
                }
              },
              serial);
        },
        serial);
  }

  private void onAttemptFailed(Client client, long granted, Throwable t) {
    inFlight = null;
    if (granted != 0) {
      leases.revokeInBackground(client, granted);
      pendingLeaseId = 0;
    }
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
    if (attempt >= RECONNECT_AFTER_ATTEMPTS && renewable && clients.renew(client)) {
      logger.debug("Reconnecting {} to etcd with a new client", who);
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

  private void onRegistered(Client client, long lease, long putRevision, int w) {
    inFlight = null;
    registeredOnce = true;
    refusal = null;
    pendingLeaseId = 0;
    leaseId = lease;
    attempt = 0;
    keyGoneAttempt = 0;
    warnedForeignLease = false;
    long gen = ++generation;
    keepAlive =
        leases.keepAlive(
            client, lease, (why, reason, cause) -> onLeaseLost(gen, why, reason, cause));
    watch =
        new KeyWatch(
            client, keyBytes, key, calls, serial, scheduler, backoff,
            new KeyWatch.Listener() {
              @Override
              public void onKeyWritten(KeyValue kv) {
                RegistrationStateMachine.this.onKeyWritten(gen, kv);
              }

              @Override
              public void onKeyGone() {
                RegistrationStateMachine.this.onKeyGone(gen);
              }
            });
    watch.start(putRevision + 1);
    logger.info(
        "Registered {} as {} with lease {} (ttl {}s, weight {})",
        who, key, Long.toHexString(lease), leases.ttlSeconds(), w);
    if (previousLeaseId != 0 && previousLeaseId != lease) {
      // The key now belongs to the new lease; the old one (if etcd still has it) holds nothing.
      leases.revokeInBackground(client, previousLeaseId);
    }
    previousLeaseId = 0;
    states.set(RegistrationState.REGISTERED);
  }

  private byte[] encode(int w) {
    return ValueCodec.encode(new ServiceInstance(service, address, w, metadata), format.forWeight(w));
  }

  private void onKeyWritten(long gen, KeyValue kv) {
    if (gen != generation || closing.get()) {
      return;
    }
    keyGoneAttempt = 0;
    if (kv.getLease() == leaseId) {
      // Someone (the CLI, or our own setWeight) rewrote the value keeping our lease: adopt its
      // weight so that a later re-registration writes what the operator chose.
      if (ValueCodec.decode(kv.getValue().getBytes()) instanceof DecodedValue.Accepted a
          && a.weight() != weight) {
        logger.info("Weight of {} changed in etcd to {} (was {})", who, a.weight(), weight);
        weight = a.weight();
      }
    } else if (!warnedForeignLease) {
      warnedForeignLease = true;
      logger.warn(
          "Key {} was overwritten with lease {} instead of ours ({}); leaving it as it is",
          key, Long.toHexString(kv.getLease()), Long.toHexString(leaseId));
    }
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
        .whenCompleteAsync((r, t) -> afterKeyGone(gen, client, lease, r, t), serial);
  }

  private void afterKeyGone(
      long gen, Client client, long lease, @Nullable LeaseTimeToLiveResponse r, @Nullable Throwable t) {
    if (gen != generation || closing.get()) {
      return;
    }
    long ttl;
    if (t == null) {
      ttl = r.getTTL();
    } else if (EtcdErrors.isLeaseNotFound(t)) {
      ttl = -1;
    } else {
      long delayNanos = backoff.delayNanos(Math.min(keyGoneAttempt++, MAX_KEY_GONE_BACKOFF_ATTEMPT));
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
      dropLease();
      leaseId = 0;
      leases.revokeInBackground(client, lease);
      states.set(RegistrationState.DELETED_BY_OPERATOR);
    } else {
      onLeaseLost(gen, RecoveryCause.KEY_LOST, "the key went with its lease (revoked or expired)", null);
    }
  }

  private void onLeaseLost(
      long gen, RecoveryCause why, String reason, @Nullable Throwable cause) {
    if (gen != generation || closing.get() || states.state() != RegistrationState.REGISTERED) {
      return;
    }
    logger.warn(
        "Lease {} of {} lost: {}; registering again", Long.toHexString(leaseId), who, reason, cause);
    dropLease();
    previousLeaseId = leaseId;
    leaseId = 0;
    attempt = 0;
    states.recover(why);
    tryRegister();
  }

  /** Stops the current lease's keepalive, watch and key-gone retry; their late work is ignored. */
  private void dropLease() {
    generation++;
    cancelTimer();
    if (keepAlive != null) {
      keepAlive.close();
      keepAlive = null;
    }
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
    dropLease();
    Client client = client();
    Duration left =
        closeTimeout.minusNanos(ticker.read() - closeStartNanos).minus(CLOSE_MARGIN);
    Set<Long> toRevoke = new LinkedHashSet<>(List.of(leaseId, pendingLeaseId, previousLeaseId));
    toRevoke.remove(0L);
    List<CompletableFuture<Void>> revokes = new ArrayList<>();
    for (long lease : toRevoke) {
      revokes.add(leases.revokeOnClose(client, lease, left));
    }
    pendingLeaseId = 0;
    previousLeaseId = 0;
    CompletableFuture.allOf(revokes.toArray(CompletableFuture<?>[]::new))
        .whenCompleteAsync((v, t) -> finishClose(), serial);
  }

  /** The end of close, once: CLOSED, waiters failed, the owned client closed. */
  private void finishClose() {
    if (!finished.compareAndSet(false, true)) {
      return;
    }
    leaseId = 0;
    states.close(closedException());
    clients.closeAsync().whenComplete((v, t) -> closed.complete(null));
  }

  private Client client() {
    return clients.client();
  }

  /** Runs {@code task} on serial after {@code delayNanos}, unless cancelled first. */
  private Future<?> schedule(Runnable task, long delayNanos) {
    Runnable hop = () -> post(task);
    return scheduler.schedule(hop, delayNanos, TimeUnit.NANOSECONDS);
  }

  /** Runs {@code task} on serial; false if the scheduler no longer runs anything. */
  private boolean post(Runnable task) {
    try {
      serial.execute(
          () -> {
            try {
              task.run();
            } catch (RuntimeException e) {
              logger.error("Unexpected failure in the registration of {}", who, e);
            }
          });
      return true;
    } catch (RejectedExecutionException e) {
      return false;
    }
  }

  private CancellationException closedException() {
    return new CancellationException("registration of " + who + " closed");
  }

  @Override
  public String toString() {
    long lease = leaseId;
    return who + ", " + states.state() + (lease != 0 ? ", lease " + Long.toHexString(lease) : "");
  }
}
