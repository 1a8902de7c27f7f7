package io.steelyard.agent;

import static java.util.Objects.requireNonNull;

import io.etcd.jetcd.Client;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.Validation;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
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
 * RegistrationState#DELETED_BY_OPERATOR}, and writes nothing until {@link #reregister()}. The
 * state machine is drawn in {@link RegistrationState}.
 *
 * <p><b>Threading.</b> Every registration of the JVM runs on one shared daemon thread ({@code
 * steelyard-registration}), each through a serial executor of its own: all state changes of one
 * registration happen there, in order. etcd calls are asynchronous; jetcd callbacks and etcd
 * answers only hand work to it, and nothing on it waits for etcd, so a thousand registrations
 * need no more threads than one. Listeners run on it and must not block. The public methods are
 * thread-safe and return at once, except {@link #close()} (at most the close timeout) and {@link
 * #setWeightAndWait}; futures they return complete on the registration's thread, so attach only
 * quick continuations, or move longer work to an executor of yours ({@code
 * reg.start().thenRunAsync(work, executor)}).
 *
 * <p><b>Ownership.</b> A registration built from an {@link EtcdConnection} creates its own jetcd
 * {@link Client} (replacing it with a fresh one when etcd keeps failing, to skip the gRPC
 * channel's reconnect backoff) and closes it in {@link #close()}. A registration built from a
 * {@code Client} never closes it: the caller keeps it open until after {@link #close()} returns;
 * sharing one client between many registrations is what keeps their thread count flat.
 */
public final class ServiceRegistration implements AutoCloseable {

  /** Default lease TTL, in seconds: {@value}. */
  public static final long DEFAULT_TTL_SECONDS = RegistrationDefaults.TTL_SECONDS;
  /** Smallest accepted lease TTL, in seconds: {@value}. */
  public static final long MIN_TTL_SECONDS = RegistrationDefaults.MIN_TTL_SECONDS;
  /** Default bound on each etcd call, in milliseconds: {@value}. */
  public static final long DEFAULT_OPERATION_TIMEOUT_MILLIS = RegistrationDefaults.OPERATION_TIMEOUT_MILLIS;
  /** Default bound on {@link #close()}, in milliseconds: {@value}. */
  public static final long DEFAULT_CLOSE_TIMEOUT_MILLIS = RegistrationDefaults.CLOSE_TIMEOUT_MILLIS;
  /** Default delay before the first retry of a failed registration, in milliseconds: {@value}. */
  public static final long DEFAULT_RETRY_INITIAL_DELAY_MILLIS = RegistrationDefaults.RETRY_INITIAL_DELAY_MILLIS;
  /** Default cap on the delay between registration retries, in milliseconds: {@value}. */
  public static final long DEFAULT_RETRY_MAX_DELAY_MILLIS = RegistrationDefaults.RETRY_MAX_DELAY_MILLIS;

  private static final Logger logger = LoggerFactory.getLogger(ServiceRegistration.class);

  private final String service;
  private final String address;
  private final String key;
  private final long ttlSeconds;
  private final Duration operationTimeout;
  private final Duration closeTimeout;
  private final RegistrationStateMachine machine;

  ServiceRegistration(ServiceRegistrationBuilder b, LeaseShare share, boolean ownsShare) {
    this.service = b.service;
    this.address = b.address;
    this.key = b.layout.instanceKey(b.service, b.address);
    this.ttlSeconds = share.ttlSeconds();
    this.operationTimeout = b.operationTimeout;
    this.closeTimeout = b.closeTimeout;
    this.machine = new RegistrationStateMachine(b, share, ownsShare);
  }

  /**
   * A registration that connects through {@code etcd} with a client and a lease of its own, both
   * closed by {@link #close()}.
   */
  public static ServiceRegistrationBuilder builder(
      EtcdConnection etcd, String service, String address) {
    return new ServiceRegistrationBuilder(requireNonNull(etcd, "etcd"), null, null, service, address);
  }

  /**
   * As {@link #builder(EtcdConnection, String, String)}, with the address still to name: {@link
   * ServiceRegistrationBuilder#address}, or {@link ServiceRegistrationBuilder#port} or {@link
   * ServiceRegistrationBuilder#server} to find the host by {@link AdvertisedAddress}'s rule.
   */
  public static ServiceRegistrationBuilder builder(EtcdConnection etcd, String service) {
    return new ServiceRegistrationBuilder(requireNonNull(etcd, "etcd"), null, null, service, null);
  }

  /** As {@link #builder(Client, String, String)}, with the address still to name. */
  public static ServiceRegistrationBuilder builder(Client client, String service) {
    return new ServiceRegistrationBuilder(null, requireNonNull(client, "client"), null, service, null);
  }

  /** As {@link #builder(SharedLease, String, String)}, with the address still to name. */
  public static ServiceRegistrationBuilder builder(SharedLease lease, String service) {
    return new ServiceRegistrationBuilder(null, null, requireNonNull(lease, "lease"), service, null);
  }

  /**
   * A registration with a lease of its own over {@code client}, which the caller owns and closes
   * after {@link #close()}.
   *
   * <p>Why a jetcd {@link Client} and not a steelyard type: sharing one client between many
   * registrations (and the application's own etcd calls) is what keeps their connection and
   * thread count flat, and the client is the caller's to configure and close. Without one, use
   * {@link #builder(EtcdConnection, String, String)}.
   */
  public static ServiceRegistrationBuilder builder(Client client, String service, String address) {
    return new ServiceRegistrationBuilder(null, requireNonNull(client, "client"), null, service, address);
  }

  /**
   * A registration that writes its key with {@code lease}, shared with the other registrations
   * built on it, over the shared lease's client. Its TTL is the shared lease's; {@link #close()}
   * deletes only its own key.
   */
  public static ServiceRegistrationBuilder builder(SharedLease lease, String service, String address) {
    return new ServiceRegistrationBuilder(null, null, requireNonNull(lease, "lease"), service, address);
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
    return machine.start();
  }

  /**
   * Completes when the registration is first {@link RegistrationState#REGISTERED}; fails with
   * {@link CancellationException} if it is closed before.
   */
  public CompletableFuture<Void> registered() {
    return machine.registered();
  }

  /**
   * Registers again after an operator deleted the key ({@link
   * RegistrationState#DELETED_BY_OPERATOR}); does nothing in any other state. The future completes
   * at the next {@link RegistrationState#REGISTERED}.
   *
   * @throws IllegalStateException if the registration is closed or was never started
   */
  public CompletableFuture<Void> reregister() {
    return machine.reregister();
  }

  /**
   * Changes the weight and returns at once. When registered, the new value is written on the
   * registration's lease, in its format, in one transaction guarded by the key's mod revision as
   * the registration knows it (no read first; a write that finds the key rewritten under its lease
   * writes again from the revision found, as an operator's weight is overwritten by an explicit
   * one), and any drain note is removed; the future completes when etcd answered, within the
   * operation timeout. A registration's
   * weight writes go one at a time, in order: a weight set while one is in flight waits for it,
   * and the next write carries the newest weight set and completes every future waiting for it.
   * In any other state the weight is only remembered, written by the next registration (or right
   * after it, if set while its put was on its way), and the future completes at once.
   *
   * <p>The future fails with {@link RegistryException} if etcd refused or did not answer in time,
   * or the key changed concurrently ({@link RegistryException.Kind#CONFLICT}); the weight is
   * remembered nonetheless. When etcd could not be reached ({@link
   * RegistryException.Kind#UNAVAILABLE}), the registration also writes it again with its retry
   * backoff until etcd holds it, unless a newer weight, a lost lease (the next registration
   * writes the remembered weight) or close comes first. To wait, {@link #setWeightAndWait}.
   *
   * <p>With a {@linkplain ServiceRegistrationBuilder#weightSource weight source}, an explicit
   * weight wins: the source is paused until {@link #resumeWeightSource()}.
   *
   * @throws IllegalArgumentException if {@code newWeight} is not in {@code 0..1000000}
   * @throws IllegalStateException if the registration is closed
   */
  public CompletableFuture<Void> setWeight(int newWeight) {
    Validation.checkWeight(newWeight);
    return machine.setWeight(newWeight);
  }

  /**
   * {@link #setWeight} and waits for etcd's answer: at most the operation timeout, plus the time
   * the update waits behind this registration's other work.
   *
   * @throws RegistryException if etcd refused or did not answer, or the key changed concurrently
   * @throws IllegalArgumentException if {@code newWeight} is not in {@code 0..1000000}
   * @throws IllegalStateException if the registration is closed
   */
  public void setWeightAndWait(int newWeight) {
    CompletableFuture<Void> f = setWeight(newWeight);
    String what = "setting the weight of " + service + " at " + address;
    try {
      f.get(operationTimeout.toNanos() + closeTimeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException re) {
        throw re;
      }
      throw new IllegalStateException(what + " failed", e.getCause());
    } catch (CancellationException e) {
      throw new IllegalStateException(what + ": the registration was closed", e);
    } catch (TimeoutException e) {
      throw new RegistryException(
          RegistryException.Kind.UNAVAILABLE, what + " did not complete in time", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new RegistryException(RegistryException.Kind.UNAVAILABLE, "interrupted " + what, e);
    }
  }

  /**
   * Hands the weight back to the {@linkplain ServiceRegistrationBuilder#weightSource weight source}
   * after an operator's weight or {@link #setWeight} paused it; it is sampled at once and its
   * weight published (subject to hysteresis and the rate limit). Does nothing if not paused.
   *
   * @throws IllegalStateException if the registration has no weight source
   */
  public void resumeWeightSource() {
    machine.resumeWeightSource();
  }

  /**
   * Whether the weight source is paused by an operator's weight or {@link #setWeight}; {@code
   * false} without a weight source.
   */
  public boolean weightSourcePaused() {
    return machine.weightSourcePaused();
  }

  /**
   * Adds a listener, which is first told the current state and then every change, on the
   * registration's thread.
   */
  public void addListener(RegistrationListener listener) {
    machine.addListener(listener);
  }

  public RegistrationState state() {
    return machine.state();
  }

  /**
   * Why etcd refused this registration (permission denied, authentication failed, TLS), while
   * {@link RegistrationState#REFUSED}; empty in every other state.
   */
  public Optional<RegistryException> refusal() {
    return machine.refusal();
  }

  /** The lease holding the key while {@link RegistrationState#REGISTERED}, else {@code 0}. */
  public long leaseId() {
    return machine.leaseId();
  }

  /** The weight this registration writes (the last one set, or read back from etcd). */
  public int weight() {
    return machine.weight();
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
   * Removes the key at once, not after the TTL: revokes the lease, or, on a {@link SharedLease}
   * other registrations still use, deletes the key alone (guarded by its revision and lease).
   * Stops all background work and, if the registration owns its client, closes it. Nothing of the
   * registration runs after it returns. Idempotent; returns within the close timeout even when
   * etcd is unreachable (the key then expires with its lease, within the TTL; on a shared lease,
   * the delete is retried in the background while the lease lives).
   */
  @Override
  public void close() {
    CompletableFuture<Void> done = closeAsync();
    try {
      done.get(closeTimeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      logger.warn(
          "Closing {} at {} did not finish within {} ms; giving up, the key expires with its lease"
              + " within {}s",
          service, address, closeTimeout.toMillis(), ttlSeconds);
      machine.forceClosed();
    } catch (ExecutionException e) {
      logger.warn("Closing {} at {} failed", service, address, e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      machine.forceClosed();
    }
  }

  /**
   * Starts closing and returns at once; the future completes once the lease is revoked (or given
   * up on) and an owned client is closed. {@link #close()} waits for it.
   */
  CompletableFuture<Void> closeAsync() {
    return machine.closeAsync();
  }

  @Override
  public String toString() {
    return "ServiceRegistration{" + machine + "}";
  }
}
