package io.steelyard.agent;

import static com.google.common.base.Preconditions.checkArgument;
import static com.google.common.base.Preconditions.checkState;
import static java.util.Objects.requireNonNull;

import com.google.common.annotations.VisibleForTesting;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.PutResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.options.LeaseOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.support.CloseableClient;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import io.grpc.stub.StreamObserver;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.registry.Validation;
import io.steelyard.registry.ValueCodec;
import io.steelyard.registry.ValueFormat;
import io.steelyard.registry.internal.Backoff;
import io.steelyard.registry.internal.EtcdCalls;
import io.steelyard.registry.internal.EtcdErrors;
import io.steelyard.registry.internal.RenewableClient;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Registers one instance of a service in etcd under a lease, keeps the lease alive, and keeps the
 * registration alive through etcd trouble until {@link #close()}.
 *
 * <pre>{@code
 * ServiceRegistration reg =
 *     ServiceRegistration.builder(EtcdConnection.of("http://127.0.0.1:2379"), "greeter", "10.0.0.7:50051")
 *         .weight(5)
 *         .ttl(Duration.ofSeconds(10))
 *         .listener(state -> log.info("registration is {}", state))
 *         .build();
 * reg.start().get(5, TimeUnit.SECONDS);   // optional: wait until the key is in etcd
 * reg.setWeight(8);                       // same lease, guarded by the key's mod revision
 * reg.close();                            // revokes the lease: the key disappears at once
 * }</pre>
 *
 * <p><b>What it does.</b> {@link #start()} grants a lease of the configured TTL, writes {@code
 * <prefix>/<service>/<address>} with that lease and the configured value format, and keeps the
 * lease alive. When the lease is lost (the keepalive answers NOT_FOUND or a TTL &le; 0, jetcd ends
 * the keepalive because no answer came within the TTL, or the key disappears together with its
 * lease) it grants a new lease and writes the key again, with capped exponential backoff and
 * jitter, for as long as it is not closed. When the key is deleted while its lease is still alive,
 * an operator deregistered the instance: the registration revokes its lease, goes to {@link
 * RegistrationState#DELETED_BY_OPERATOR}, and writes nothing until {@link #reregister()}.
 *
 * <p><b>Threading.</b> All state changes happen on one daemon thread owned by the registration;
 * jetcd callbacks only hand work to it. Listeners run on that thread. The public methods are
 * thread-safe. {@link #setWeight} blocks for at most about twice the operation timeout, {@link
 * #close()} for at most the close timeout, whether etcd answers or not.
 *
 * <p><b>Ownership.</b> A registration built from an {@link EtcdConnection} creates its own jetcd
 * {@link Client} and closes it in {@link #close()}. A registration built from a {@code Client}
 * never closes it: the caller keeps it open until after {@link #close()} returns.
 */
public final class ServiceRegistration implements AutoCloseable {

  /** Default lease TTL, in seconds: {@value}. */
  public static final long DEFAULT_TTL_SECONDS = 10;
  /** Smallest accepted lease TTL, in seconds: {@value}. */
  public static final long MIN_TTL_SECONDS = 2;
  /** Default bound on each etcd call, in milliseconds: {@value}. */
  public static final long DEFAULT_OPERATION_TIMEOUT_MILLIS = 5_000;
  /** Default bound on {@link #close()}, in milliseconds: {@value}. */
  public static final long DEFAULT_CLOSE_TIMEOUT_MILLIS = 5_000;
  /** Default delay before the first retry of a failed registration, in milliseconds: {@value}. */
  public static final long DEFAULT_RETRY_INITIAL_DELAY_MILLIS = 200;
  /** Default cap on the delay between registration retries, in milliseconds: {@value}. */
  public static final long DEFAULT_RETRY_MAX_DELAY_MILLIS = 5_000;
  /** Each retry delay is scaled by a random factor in {@code [1 - jitter, 1 + jitter]}. */
  static final double RETRY_JITTER = 0.2;
  /** Consecutive failed attempts after which an owned client is replaced; see RenewableClient. */
  static final int RECONNECT_AFTER_ATTEMPTS = 2;
  /**
   * Minimum time between two replacements of an owned client. Short, unlike discovery's: the
   * key must be back within about a TTL of etcd's return, and a client younger than this has a
   * gRPC reconnect backoff of at most a few seconds.
   */
  static final Duration RENEW_CLIENT_MIN_INTERVAL = Duration.ofSeconds(2);

  private static final Logger logger = LoggerFactory.getLogger(ServiceRegistration.class);

  /** The etcd client; an owned one is replaced after repeated failures (see tryRegister). */
  private final RenewableClient clients;
  private final KeyLayout layout;
  private final String service;
  private final String address;
  private final String key;
  private final ByteSequence keyBytes;
  private final long ttlSeconds;
  private final ValueFormat format;
  private final Map<String, String> metadata;
  private final Duration operationTimeout;
  private final Duration closeTimeout;
  private final Backoff backoff;
  private final EtcdCalls calls;
  private final ScheduledThreadPoolExecutor executor;
  private final CopyOnWriteArrayList<RegistrationListener> listeners = new CopyOnWriteArrayList<>();
  private final CompletableFuture<Void> firstRegistered = new CompletableFuture<>();
  private final CompletableFuture<Void> closeDone = new CompletableFuture<>();
  private final AtomicBoolean started = new AtomicBoolean();
  private final AtomicBoolean closing = new AtomicBoolean();

  private volatile Thread executorThread;
  private volatile RegistrationState state = RegistrationState.NEW;
  /** The live lease holding the key; 0 unless REGISTERED. Written only on the executor. */
  private volatile long leaseId;
  /** The weight written on the next registration; updated by setWeight and by others' rewrites. */
  private volatile int weight;
  /** Why etcd refused the last attempt, while {@link RegistrationState#REFUSED}; else null. */
  @Nullable private volatile RegistryException refusal;
  /** The etcd call the executor is blocked on, so close() can cancel it. */
  @Nullable private volatile Future<?> inFlight;

  // Confined to the executor thread.
  /** Bumped whenever a lease's keepalive and watch are dropped, to ignore their late callbacks. */
  private long generation;
  /** A lease granted but not yet holding the key. */
  private long pendingLeaseId;
  /** A lease that lost its keepalive but may still hold the key in etcd; revoked once replaced. */
  private long previousLeaseId;
  private int attempt;
  /** Identifies the current watcher; bumped when it is replaced, since closing one completes it. */
  private long watchSeq;
  private int watchAttempt;
  @Nullable private CloseableClient keepAlive;
  @Nullable private Watch.Watcher watcher;
  @Nullable private ScheduledFuture<?> retry;
  private final List<CompletableFuture<Void>> waiters = new ArrayList<>();
  private boolean warnedForeignLease;
  private boolean registeredOnce;

  private ServiceRegistration(Builder b, RenewableClient clients) {
    this.clients = clients;
    this.layout = b.layout;
    this.service = b.service;
    this.address = b.address;
    this.key = b.layout.instanceKey(b.service, b.address);
    this.keyBytes = b.layout.instanceKeyBytes(b.service, b.address);
    this.ttlSeconds = b.ttlSeconds;
    this.format = b.effectiveFormat();
    this.metadata = Map.copyOf(b.metadata);
    this.weight = b.weight;
    this.operationTimeout = b.operationTimeout;
    this.closeTimeout = b.closeTimeout;
    this.backoff = new Backoff(b.retryInitialDelay, b.retryMaxDelay, RETRY_JITTER, b.random);
    this.calls = new EtcdCalls(b.operationTimeout);
    this.listeners.addAll(b.listeners);
    this.executor =
        new ScheduledThreadPoolExecutor(
            1,
            r -> {
              Thread t = new Thread(r, "steelyard-registration-" + service + "-" + address);
              t.setDaemon(true);
              executorThread = t;
              return t;
            });
    executor.setRemoveOnCancelPolicy(true);
    // Nothing runs after close: pending retries are dropped when the executor shuts down.
    executor.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
    executor.setContinueExistingPeriodicTasksAfterShutdownPolicy(false);
  }

  /**
   * A registration that connects through {@code etcd} with a client of its own, closed by {@link
   * #close()}.
   */
  public static Builder builder(EtcdConnection etcd, String service, String address) {
    return new Builder(requireNonNull(etcd, "etcd"), null, service, address);
  }

  /** A registration over {@code client}, which the caller owns and closes after {@link #close()}. */
  public static Builder builder(Client client, String service, String address) {
    return new Builder(null, requireNonNull(client, "client"), service, address);
  }

  /**
   * Starts registering in the background and returns at once. The returned future completes when
   * the key is first in etcd; until then the registration retries with backoff, forever, while
   * etcd is unreachable (a failed attempt is logged, never thrown). If etcd <em>refuses</em> the
   * registration (permission denied, authentication failed, TLS) the future fails with that
   * {@link RegistryException} ({@code kind().refused()}) and the registration goes on trying
   * slowly in state {@link RegistrationState#REFUSED}. The future fails with {@link
   * CancellationException} if the registration is closed first. Calling it again returns the same
   * future.
   *
   * @throws IllegalStateException if the registration is closed
   */
  public CompletableFuture<Void> start() {
    checkState(!closing.get(), "registration of %s at %s is closed", service, address);
    if (started.compareAndSet(false, true)) {
      post(
          () -> {
            setState(RegistrationState.REGISTERING);
            tryRegister();
          });
    }
    return registered();
  }

  /**
   * Completes when the registration is first {@link RegistrationState#REGISTERED}; fails with
   * {@link CancellationException} if it is closed before.
   */
  public CompletableFuture<Void> registered() {
    if (state == RegistrationState.REGISTERED) {
      return CompletableFuture.completedFuture(null); // also after a refusal that was fixed
    }
    return firstRegistered.copy();
  }

  /**
   * Registers again after an operator deleted the key ({@link
   * RegistrationState#DELETED_BY_OPERATOR}); does nothing in any other state. The future completes
   * at the next {@link RegistrationState#REGISTERED}.
   *
   * @throws IllegalStateException if the registration is closed or was never started
   */
  public CompletableFuture<Void> reregister() {
    checkState(!closing.get(), "registration of %s at %s is closed", service, address);
    checkState(started.get(), "registration of %s at %s was never started", service, address);
    CompletableFuture<Void> f = new CompletableFuture<>();
    post(
        () -> {
          if (state == RegistrationState.REGISTERED) {
            f.complete(null);
            return;
          }
          waiters.add(f);
          if (state == RegistrationState.DELETED_BY_OPERATOR || state == RegistrationState.REFUSED) {
            logger.info("Registering {} at {} again, as asked", service, address);
            if (retry != null) {
              retry.cancel(false);
              retry = null;
            }
            attempt = 0;
            setState(RegistrationState.REGISTERING);
            tryRegister();
          }
        });
    return f;
  }

  /**
   * Changes the weight. When registered, the new value is written through {@link
   * InstanceStore#setWeight(String, String, int)}: with the key's current lease, in a transaction
   * guarded by its mod revision, keeping the value's format. In any other state the weight is only
   * remembered and written by the next registration. Blocks until etcd answered (bounded by the
   * operation timeout).
   *
   * @throws IllegalArgumentException if {@code newWeight} is not in {@code 0..1000000}
   * @throws RegistryException if etcd refused or did not answer, or the key changed concurrently
   *     ({@link RegistryException.Kind#CONFLICT}); the weight is remembered nonetheless
   * @throws IllegalStateException if the registration is closed
   */
  public void setWeight(int newWeight) {
    Validation.checkWeight(newWeight);
    checkState(!closing.get(), "registration of %s at %s is closed", service, address);
    if (Thread.currentThread() == executorThread) {
      doSetWeight(newWeight);
      return;
    }
    CompletableFuture<Void> done = new CompletableFuture<>();
    post(
        () -> {
          try {
            doSetWeight(newWeight);
            done.complete(null);
          } catch (RuntimeException e) {
            done.completeExceptionally(e);
          }
        });
    try {
      done.get(2 * operationTimeout.toMillis() + closeTimeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException re) {
        throw re;
      }
      throw new IllegalStateException(e.getCause());
    } catch (TimeoutException e) {
      throw new RegistryException(
          RegistryException.Kind.UNAVAILABLE,
          "setting the weight of " + service + " at " + address + " timed out",
          e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new RegistryException(
          RegistryException.Kind.UNAVAILABLE, "interrupted while setting the weight", e);
    }
  }

  private void doSetWeight(int newWeight) {
    if (closing.get()) {
      throw new IllegalStateException(
          "registration of " + service + " at " + address + " is closed");
    }
    int old = weight;
    weight = newWeight;
    if (state == RegistrationState.REGISTERED) {
      new InstanceStore(client(), layout, operationTimeout).setWeight(service, address, newWeight);
      logger.info(
          "Weight of {} at {} set to {} (was {}), lease {}", service, address, newWeight, old,
          leaseId);
    } else {
      logger.info(
          "Weight of {} at {} will be {} (was {}) once registered (now {})",
          service, address, newWeight, old, state);
    }
  }

  /**
   * Adds a listener, which is first told the current state and then every change, on the
   * registration's thread.
   */
  public void addListener(RegistrationListener listener) {
    requireNonNull(listener, "listener");
    listeners.add(listener);
    if (!post(() -> notify(listener, state))) {
      notify(listener, state);
    }
  }

  public RegistrationState state() {
    return state;
  }

  /**
   * Why etcd refused this registration (permission denied, authentication failed, TLS), while
   * {@link RegistrationState#REFUSED}; empty in every other state.
   */
  public Optional<RegistryException> refusal() {
    return state == RegistrationState.REFUSED ? Optional.ofNullable(refusal) : Optional.empty();
  }

  /** The lease holding the key while {@link RegistrationState#REGISTERED}, else {@code 0}. */
  public long leaseId() {
    return leaseId;
  }

  /** The weight this registration writes (the last one set, or read back from etcd). */
  public int weight() {
    return weight;
  }

  public String service() {
    return service;
  }

  public String address() {
    return address;
  }

  /** The etcd key, {@code <prefix>/<service>/<address>}. */
  public String key() {
    return key;
  }

  /** The lease TTL in seconds. */
  public long ttlSeconds() {
    return ttlSeconds;
  }

  /**
   * Revokes the lease (so the key is gone at once, not after the TTL), stops all background work
   * and, if the registration owns its client, closes it. Idempotent; returns within the close
   * timeout even when etcd is unreachable (the key then expires with its lease, within the TTL).
   */
  @Override
  public void close() {
    if (closing.compareAndSet(false, true)) {
      Future<?> f = inFlight;
      if (f != null) {
        f.cancel(true);
      }
      if (!post(this::doClose)) {
        closeDone.complete(null);
      }
    }
    try {
      closeDone.get(closeTimeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      logger.warn(
          "Closing {} at {} did not finish within {} ms; giving up, the key expires with its lease"
              + " within {}s",
          service, address, closeTimeout.toMillis(), ttlSeconds);
      executor.shutdownNow();
      clients.close();
    } catch (ExecutionException e) {
      logger.warn("Closing {} at {} failed", service, address, e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      executor.shutdownNow();
    }
  }

  // ---- everything below runs on the executor thread ----

  private void tryRegister() {
    retry = null;
    if (closing.get() || state == RegistrationState.REGISTERED) {
      return;
    }
    long granted = 0;
    Client attemptClient = client();
    try {
      granted =
          call(
                  () -> client().getLeaseClient()
                      .grant(ttlSeconds, operationTimeout.toMillis(), TimeUnit.MILLISECONDS),
                  "grant a lease")
              .getID();
      pendingLeaseId = granted;
      int w = weight;
      PutOption withLease = PutOption.builder().withLeaseId(granted).build();
      PutResponse put =
          call(
              () -> client().getKVClient().put(keyBytes, ByteSequence.from(encode(w)), withLease),
              "put " + key);
      pendingLeaseId = 0;
      leaseId = granted;
      attempt = 0;
      watchAttempt = 0;
      warnedForeignLease = false;
      long gen = ++generation;
      startKeepAlive(granted, gen);
      startWatch(put.getHeader().getRevision() + 1, gen);
      logger.info(
          "Registered {} at {} as {} with lease {} (ttl {}s, weight {})",
          service, address, key, Long.toHexString(granted), ttlSeconds, w);
      if (previousLeaseId != 0 && previousLeaseId != granted) {
        // The key now belongs to the new lease; the old one (if etcd still has it) holds nothing.
        revokeInBackground(previousLeaseId);
      }
      previousLeaseId = 0;
      setState(RegistrationState.REGISTERED);
    } catch (Exception e) {
      if (closing.get()) {
        return; // close() cancelled the call; doClose revokes pendingLeaseId
      }
      if (granted != 0) {
        revokeInBackground(granted);
        pendingLeaseId = 0;
      }
      // A refusal (permission, credentials, TLS, a limit) is not an outage: neither a quick retry
      // nor a new client fixes it, so wait the longest delay until an operator has acted.
      RegistryException failure = EtcdErrors.toRegistryException("register " + key, e);
      boolean refused = failure.kind().refused();
      long delayNanos = refused ? backoff.cappedDelayNanos() : backoff.delayNanos(attempt);
      attempt++;
      if (refused) {
        onRefused(failure, delayNanos);
      } else if (state == RegistrationState.REFUSED) {
        setState(registeredOnce ? RegistrationState.RECOVERING : RegistrationState.REGISTERING);
      }
      if (refused) {
        // onRefused logged it, once, in one line.
      } else if (attempt == 1 || attempt % 10 == 0) {
        logger.warn(
            "Could not register {} at {} (attempt {}); retrying in {} ms",
            service, address, attempt, TimeUnit.NANOSECONDS.toMillis(delayNanos), unwrap(e));
      } else {
        logger.warn(
            "Could not register {} at {} (attempt {}); retrying in {} ms: {}",
            service, address, attempt, TimeUnit.NANOSECONDS.toMillis(delayNanos),
            String.valueOf(unwrap(e).getMessage()));
      }
      // A new client also reads the certificate files again: after a TLS refusal (an expired
      // client certificate, say) that picks up rotated files without a restart.
      boolean renewable = !refused || failure.kind() == RegistryException.Kind.TLS;
      if (attempt >= RECONNECT_AFTER_ATTEMPTS && renewable && clients.renew(attemptClient)) {
        logger.debug("Reconnecting {} at {} to etcd with a new client", service, address);
      }
      retry = executor.schedule(this::tryRegister, delayNanos, TimeUnit.NANOSECONDS);
    }
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
          "etcd refused to register {} at {}: {}; trying again every {} ms in case the role or"
              + " credentials are fixed",
          service, address, failure.getMessage(), TimeUnit.NANOSECONDS.toMillis(retryNanos));
    } else {
      logger.debug("etcd still refuses to register {} at {}: {}", service, address, failure.getMessage());
    }
    setState(RegistrationState.REFUSED);
    firstRegistered.completeExceptionally(failure);
    waiters.forEach(w -> w.completeExceptionally(failure));
    waiters.clear();
  }

  private byte[] encode(int w) {
    return ValueCodec.encode(new ServiceInstance(service, address, w, metadata), format.forWeight(w));
  }

  private void startKeepAlive(long lease, long gen) {
    keepAlive =
        client().getLeaseClient()
            .keepAlive(
                lease,
                new StreamObserver<LeaseKeepAliveResponse>() {
                  @Override
                  public void onNext(LeaseKeepAliveResponse r) {
                    if (r.getTTL() <= 0) {
                      post(() -> onLeaseLost(gen, "keepalive answered TTL " + r.getTTL(), null));
                    }
                  }

                  @Override
                  public void onError(Throwable t) {
                    post(() -> onKeepAliveError(gen, lease, t));
                  }

                  @Override
                  public void onCompleted() {
                    // jetcd ends a keepalive this way when no answer came within the TTL.
                    post(() -> onLeaseLost(gen, "no keepalive answer within the TTL", null));
                  }
                });
  }

  private void onKeepAliveError(long gen, long lease, Throwable t) {
    if (gen != generation || closing.get()) {
      return;
    }
    if (isLeaseNotFound(t)) {
      onLeaseLost(gen, "etcd no longer knows the lease", null);
      return;
    }
    // jetcd reports a broken keepalive stream to every observer but keeps the lease and reopens
    // the stream itself after 500 ms; if no answer arrives within the TTL it ends the keepalive
    // with onCompleted, which is when we count the lease as lost.
    logger.info(
        "Keepalive stream of lease {} ({} at {}) failed; jetcd reopens it: {}",
        Long.toHexString(lease), service, address, String.valueOf(unwrap(t).getMessage()));
  }

  private void startWatch(long fromRevision, long gen) {
    long seq = ++watchSeq;
    watcher =
        client().getWatchClient()
            .watch(
                keyBytes,
                // requireLeader: a member cut off from its cluster ends the watch (and we read
                // the key again) instead of silently missing an operator's delete.
                WatchOption.builder().withRevision(fromRevision).withRequireLeader(true).build(),
                new Watch.Listener() {
                  @Override
                  public void onNext(WatchResponse response) {
                    List<WatchEvent> events = response.getEvents();
                    post(() -> onKeyEvents(gen, seq, events));
                  }

                  @Override
                  public void onError(Throwable t) {
                    post(() -> resyncWatch(gen, seq, t));
                  }

                  @Override
                  public void onCompleted() {
                    post(() -> resyncWatch(gen, seq, null));
                  }
                });
  }

  private void onKeyEvents(long gen, long seq, List<WatchEvent> events) {
    if (gen != generation || seq != watchSeq || closing.get()) {
      return;
    }
    watchAttempt = 0;
    for (WatchEvent event : events) {
      if (event.getEventType() == WatchEvent.EventType.DELETE) {
        onKeyGone(gen);
        return;
      }
      if (event.getEventType() == WatchEvent.EventType.PUT) {
        onKeyWritten(event.getKeyValue());
      }
    }
  }

  private void onKeyWritten(KeyValue kv) {
    if (kv.getLease() == leaseId) {
      // Someone (the CLI, or our own setWeight) rewrote the value keeping our lease: adopt its
      // weight so that a later re-registration writes what the operator chose.
      if (ValueCodec.decode(kv.getValue().getBytes()) instanceof DecodedValue.Accepted a
          && a.weight() != weight) {
        logger.info(
            "Weight of {} at {} changed in etcd to {} (was {})", service, address, a.weight(),
            weight);
        weight = a.weight();
      }
    } else if (!warnedForeignLease) {
      warnedForeignLease = true;
      logger.warn(
          "Key {} was overwritten with lease {} instead of ours ({}); leaving it as it is",
          key, Long.toHexString(kv.getLease()), Long.toHexString(leaseId));
    }
  }

  private void resyncWatch(long gen, long seq, @Nullable Throwable cause) {
    if (gen != generation || seq != watchSeq || closing.get()) {
      return;
    }
    closeWatcher();
    long nextSeq = watchSeq;
    try {
      GetResponse r = call(() -> client().getKVClient().get(keyBytes), "get " + key);
      if (r.getKvs().isEmpty()) {
        onKeyGone(gen);
        return;
      }
      logger.debug(
          "Watch of {} ended ({}); watching again from revision {}",
          key, cause == null ? "completed" : cause.getMessage(), r.getHeader().getRevision() + 1);
      startWatch(r.getHeader().getRevision() + 1, gen);
    } catch (Exception e) {
      if (closing.get()) {
        return;
      }
      long delayNanos = backoff.delayNanos(Math.min(watchAttempt++, 10));
      logger.info(
          "Cannot watch {} again yet (lease {}); retrying in {} ms: {}",
          key, Long.toHexString(leaseId), TimeUnit.NANOSECONDS.toMillis(delayNanos),
          String.valueOf(unwrap(e).getMessage()));
      executor.schedule(
          () -> resyncWatch(gen, nextSeq, cause), delayNanos, TimeUnit.NANOSECONDS);
    }
  }

  /** The key disappeared: an operator's delete if the lease lives on, else a lost lease. */
  private void onKeyGone(long gen) {
    if (gen != generation || closing.get()) {
      return;
    }
    long lease = leaseId;
    long ttl;
    try {
      ttl = call(() -> client().getLeaseClient().timeToLive(lease, LeaseOption.DEFAULT), "lease ttl")
          .getTTL();
    } catch (Exception e) {
      if (closing.get()) {
        return;
      }
      if (isLeaseNotFound(e)) {
        ttl = -1;
      } else {
        long delayNanos = backoff.delayNanos(Math.min(watchAttempt++, 10));
        logger.info(
            "Key {} is gone; cannot ask etcd about lease {} yet, asking again in {} ms: {}",
            key, Long.toHexString(lease), TimeUnit.NANOSECONDS.toMillis(delayNanos),
            String.valueOf(unwrap(e).getMessage()));
        executor.schedule(() -> onKeyGone(gen), delayNanos, TimeUnit.NANOSECONDS);
        return;
      }
    }
    if (ttl > 0) {
      logger.warn(
          "Key {} was deleted while lease {} is alive: an operator deregistered {} at {}; not"
              + " writing it back until reregister()",
          key, Long.toHexString(lease), service, address);
      dropLease();
      leaseId = 0;
      revokeInBackground(lease);
      setState(RegistrationState.DELETED_BY_OPERATOR);
    } else {
      onLeaseLost(gen, "the key went with its lease (revoked or expired)", null);
    }
  }

  private void onLeaseLost(long gen, String reason, @Nullable Throwable cause) {
    if (gen != generation || closing.get() || state != RegistrationState.REGISTERED) {
      return;
    }
    logger.warn(
        "Lease {} of {} at {} lost: {}; registering again",
        Long.toHexString(leaseId), service, address, reason, cause);
    dropLease();
    previousLeaseId = leaseId;
    leaseId = 0;
    attempt = 0;
    setState(RegistrationState.RECOVERING);
    tryRegister();
  }

  /** Stops the current lease's keepalive and watch and makes their late callbacks no-ops. */
  private void dropLease() {
    generation++;
    if (keepAlive != null) {
      keepAlive.close();
      keepAlive = null;
    }
    closeWatcher();
  }

  private void closeWatcher() {
    watchSeq++; // jetcd completes a watcher it closes; that must not look like the watch ending
    if (watcher != null) {
      try {
        watcher.close();
      } catch (RuntimeException e) {
        logger.debug("Closing the watch of {} failed", key, e);
      }
      watcher = null;
    }
  }

  private void doClose() {
    long deadlineNanos = System.nanoTime() + closeTimeout.toNanos();
    try {
      if (retry != null) {
        retry.cancel(false);
        retry = null;
      }
      dropLease();
      for (long lease : new long[] {leaseId, pendingLeaseId, previousLeaseId}) {
        if (lease != 0) {
          revokeOnClose(lease, deadlineNanos);
        }
      }
      leaseId = 0;
      pendingLeaseId = 0;
      previousLeaseId = 0;
      setState(RegistrationState.CLOSED);
      CancellationException cancelled =
          new CancellationException("registration of " + service + " at " + address + " closed");
      firstRegistered.completeExceptionally(cancelled);
      waiters.forEach(w -> w.completeExceptionally(cancelled));
      waiters.clear();
      clients.close();
    } finally {
      executor.shutdown();
      closeDone.complete(null);
    }
  }

  private void revokeOnClose(long lease, long deadlineNanos) {
    long leftMillis =
        Math.min(
            operationTimeout.toMillis(),
            TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime()) - 100);
    if (leftMillis <= 0) {
      logger.warn(
          "No time left to revoke lease {} of {} at {}; the key expires within {}s",
          Long.toHexString(lease), service, address, ttlSeconds);
      return;
    }
    try {
      new EtcdCalls(Duration.ofMillis(leftMillis))
          .await("revoke lease " + Long.toHexString(lease), () -> client().getLeaseClient().revoke(lease));
      logger.info(
          "Deregistered {} at {}: revoked lease {}", service, address, Long.toHexString(lease));
    } catch (RegistryException e) {
      if (isLeaseNotFound(e)) {
        logger.debug("Lease {} was already gone", Long.toHexString(lease));
      } else {
        logger.warn(
            "Could not revoke lease {} of {} at {}; the key expires within {}s: {}",
            Long.toHexString(lease), service, address, ttlSeconds, e.getMessage());
      }
    }
  }

  private void revokeInBackground(long lease) {
    calls.call("revoke lease " + Long.toHexString(lease), () -> client().getLeaseClient().revoke(lease))
        .whenComplete(
            (r, t) -> {
              if (t != null && !isLeaseNotFound(t)) {
                logger.debug("Revoking stale lease {} failed", Long.toHexString(lease), t);
              }
            });
  }

  /** The current etcd client; replaced only between registration attempts. */
  private Client client() {
    return clients.client();
  }

  private void setState(RegistrationState next) {
    RegistrationState prev = state;
    if (prev == next) {
      return;
    }
    state = next;
    logger.debug("Registration of {} at {}: {} -> {}", service, address, prev, next);
    if (next == RegistrationState.REGISTERED) {
      registeredOnce = true;
      refusal = null;
      firstRegistered.complete(null);
      waiters.forEach(w -> w.complete(null));
      waiters.clear();
    }
    for (RegistrationListener l : listeners) {
      notify(l, next);
    }
  }

  private void notify(RegistrationListener l, RegistrationState s) {
    try {
      l.onStateChanged(s);
    } catch (RuntimeException e) {
      logger.warn("Listener of {} at {} threw on {}", service, address, s, e);
    }
  }

  /** Runs {@code task} on the registration's thread; false if it no longer runs anything. */
  private boolean post(Runnable task) {
    try {
      executor.execute(
          () -> {
            try {
              task.run();
            } catch (RuntimeException e) {
              logger.error("Unexpected failure in the registration of {} at {}", service, address,
                  e);
            }
          });
      return true;
    } catch (RejectedExecutionException e) {
      return false;
    }
  }

  /**
   * Waits for an etcd call through the shared call layer, bounded by the operation timeout;
   * close() can cancel the wait.
   */
  private <T> T call(Supplier<CompletableFuture<T>> call, String what) throws Exception {
    CompletableFuture<T> f = calls.call(what, call);
    inFlight = f;
    try {
      if (closing.get()) {
        f.cancel(true);
      }
      return f.get();
    } finally {
      inFlight = null;
    }
  }

  private static Throwable unwrap(Throwable t) {
    return EtcdErrors.unwrap(t);
  }

  private static boolean isLeaseNotFound(Throwable t) {
    return EtcdErrors.isLeaseNotFound(t);
  }

  @Override
  public String toString() {
    return "ServiceRegistration{" + service + " at " + address + ", " + state
        + (leaseId != 0 ? ", lease " + Long.toHexString(leaseId) : "") + "}";
  }

  /**
   * Builds a {@link ServiceRegistration}; every setting is checked here, and {@link #build()}
   * throws {@link IllegalArgumentException} naming a bad value.
   */
  public static final class Builder {
    @Nullable private final EtcdConnection etcd;
    @Nullable private final Client client;
    private final String service;
    private final String address;
    private int weight = Validation.DEFAULT_WEIGHT;
    private long ttlSeconds = DEFAULT_TTL_SECONDS;
    @Nullable private ValueFormat format;
    private Map<String, String> metadata = Map.of();
    private KeyLayout layout = KeyLayout.defaults();
    private final List<RegistrationListener> listeners = new ArrayList<>();
    private Duration operationTimeout = Duration.ofMillis(DEFAULT_OPERATION_TIMEOUT_MILLIS);
    private Duration closeTimeout = Duration.ofMillis(DEFAULT_CLOSE_TIMEOUT_MILLIS);
    private Duration retryInitialDelay = Duration.ofMillis(DEFAULT_RETRY_INITIAL_DELAY_MILLIS);
    private Duration retryMaxDelay = Duration.ofMillis(DEFAULT_RETRY_MAX_DELAY_MILLIS);
    private Random random = new SecureRandom();

    private Builder(
        @Nullable EtcdConnection etcd, @Nullable Client client, String service, String address) {
      this.etcd = etcd;
      this.client = client;
      this.service = Validation.checkServiceName(service);
      this.address = Validation.checkAddress(address);
    }

    /** The weight, {@code 0..1000000}; default {@value Validation#DEFAULT_WEIGHT}. */
    public Builder weight(int weight) {
      this.weight = Validation.checkWeight(weight);
      return this;
    }

    /**
     * The lease TTL, whole seconds (a fraction is rounded up), at least {@value #MIN_TTL_SECONDS}
     * s; default {@value #DEFAULT_TTL_SECONDS} s. The key outlives a crashed server by at most
     * this long.
     */
    public Builder ttl(Duration ttl) {
      requireNonNull(ttl, "ttl");
      checkArgument(
          ttl.compareTo(Duration.ofSeconds(MIN_TTL_SECONDS)) >= 0,
          "ttl: %s (expected: >= %ss)", ttl, MIN_TTL_SECONDS);
      long s = ttl.getSeconds() + (ttl.getNano() > 0 ? 1 : 0);
      checkArgument(s <= Integer.MAX_VALUE, "ttl: %s (expected: <= %ss)", ttl, Integer.MAX_VALUE);
      this.ttlSeconds = s;
      return this;
    }

    /** Like {@link #ttl(Duration)}, in seconds. */
    public Builder ttlSeconds(long seconds) {
      checkArgument(
          seconds >= MIN_TTL_SECONDS, "ttl: %ss (expected: >= %ss)", seconds, MIN_TTL_SECONDS);
      return ttl(Duration.ofSeconds(seconds));
    }

    /**
     * The value format: {@link ValueFormat#PIPE} by default, {@link ValueFormat#JSON} (etcd
     * naming, Go-compatible) when metadata is given. {@link ValueFormat#PLAIN} carries neither
     * weight nor metadata, so it is accepted only with weight 1 and no metadata.
     */
    public Builder format(ValueFormat format) {
      this.format = requireNonNull(format, "format");
      return this;
    }

    /** Metadata (zone, version, ...), written only in the JSON format; may not contain "weight". */
    public Builder metadata(Map<String, String> metadata) {
      requireNonNull(metadata, "metadata");
      this.metadata = Map.copyOf(metadata);
      return this;
    }

    /** The key layout; default {@link KeyLayout#defaults()} (prefix {@code /services}). */
    public Builder keyLayout(KeyLayout layout) {
      this.layout = requireNonNull(layout, "layout");
      return this;
    }

    /** Adds a listener; see {@link RegistrationListener} for when and where it runs. */
    public Builder listener(RegistrationListener listener) {
      listeners.add(requireNonNull(listener, "listener"));
      return this;
    }

    /**
     * Bound on each etcd call (grant, put, revoke, ...); default {@value
     * #DEFAULT_OPERATION_TIMEOUT_MILLIS} ms.
     */
    public Builder operationTimeout(Duration timeout) {
      this.operationTimeout = positive(timeout, "operationTimeout");
      return this;
    }

    /** Bound on {@link ServiceRegistration#close()}; default {@value #DEFAULT_CLOSE_TIMEOUT_MILLIS} ms. */
    public Builder closeTimeout(Duration timeout) {
      this.closeTimeout = positive(timeout, "closeTimeout");
      return this;
    }

    /**
     * Backoff between registration attempts: {@code initial} doubling up to {@code max}, each
     * scaled by a random factor in [0.8, 1.2]; defaults {@value
     * #DEFAULT_RETRY_INITIAL_DELAY_MILLIS} ms and {@value #DEFAULT_RETRY_MAX_DELAY_MILLIS} ms.
     */
    public Builder retryBackoff(Duration initial, Duration max) {
      positive(initial, "retryInitialDelay");
      positive(max, "retryMaxDelay");
      checkArgument(
          max.compareTo(initial) >= 0, "retryMaxDelay: %s (expected: >= %s)", max, initial);
      this.retryInitialDelay = initial;
      this.retryMaxDelay = max;
      return this;
    }

    @VisibleForTesting
    Builder random(Random random) {
      this.random = requireNonNull(random, "random");
      return this;
    }

    private ValueFormat effectiveFormat() {
      if (format != null) {
        return format;
      }
      return metadata.isEmpty() ? ValueFormat.PIPE : ValueFormat.JSON;
    }

    /**
     * Checks the settings together and builds the registration (which does nothing until {@link
     * ServiceRegistration#start()}).
     *
     * @throws IllegalArgumentException naming the offending value
     */
    public ServiceRegistration build() {
      // Validates metadata and that the format can carry weight and metadata.
      ValueCodec.encode(new ServiceInstance(service, address, weight, metadata), effectiveFormat());
      layout.instanceKey(service, address);
      if (client != null) {
        return new ServiceRegistration(this, RenewableClient.borrowed(client));
      }
      return new ServiceRegistration(
          this, RenewableClient.owned(requireNonNull(etcd), RENEW_CLIENT_MIN_INTERVAL));
    }

    private static Duration positive(Duration d, String name) {
      requireNonNull(d, name);
      checkArgument(!d.isNegative() && !d.isZero(), "%s: %s (expected: > 0)", name, d);
      return d;
    }
  }
}
