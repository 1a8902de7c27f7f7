package io.steelyard.agent;

import static java.util.Objects.requireNonNull;

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
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The lease side of a registration: grants a lease of the TTL, keeps it alive and says once when
 * it is lost, revokes it. The key written with the lease, its watch and the decisions are
 * {@link RegistrationStateMachine}'s: this seam is where one lease per process, shared by every
 * registration, would plug in.
 *
 * <p>Lease loss, as jetcd reports it: the keepalive answers a TTL &le; 0 or NOT_FOUND (etcd no
 * longer has the lease), or jetcd ends the keepalive with {@code onCompleted} because no answer
 * came within the TTL. Any other keepalive error is a broken stream that jetcd reopens itself
 * after 500 ms; it is logged, not acted on.
 *
 * <p>Threading: every callback of a {@link KeptAlive} runs on the registration's serial
 * executor. No method blocks. Stateless apart from the settings.
 */
final class LeaseKeeper {

  /** Told once that a kept-alive lease is lost, on the serial executor. */
  interface LossListener {
    void onLeaseLost(RecoveryCause why, String reason, @Nullable Throwable cause);
  }

  private static final Logger logger = LoggerFactory.getLogger(LeaseKeeper.class);

  private final long ttlSeconds;
  private final Duration operationTimeout;
  private final EtcdCalls calls;
  private final EtcdCalls.Timer timer;
  private final Executor serial;
  private final String who;

  LeaseKeeper(
      long ttlSeconds,
      Duration operationTimeout,
      EtcdCalls.Timer timer,
      Executor serial,
      String who) {
    this.ttlSeconds = ttlSeconds;
    this.operationTimeout = operationTimeout;
    this.calls = new EtcdCalls(operationTimeout, timer);
    this.timer = timer;
    this.serial = serial;
    this.who = who;
  }

  long ttlSeconds() {
    return ttlSeconds;
  }

  /** Grants a lease of the TTL; bounded by the operation timeout, also on etcd's side. */
  CompletableFuture<LeaseGrantResponse> grant(Client client) {
    return calls.call(
        "grant a lease",
        () ->
            client.getLeaseClient()
                .grant(ttlSeconds, operationTimeout.toMillis(), TimeUnit.MILLISECONDS));
  }

  /** Keeps {@code lease} alive until the returned handle is closed or the lease is lost. */
  KeptAlive keepAlive(Client client, long lease, LossListener listener) {
    KeptAlive kept = new KeptAlive(lease, requireNonNull(listener, "listener"));
    kept.stream =
        client.getLeaseClient()
            .keepAlive(
                lease,
                new StreamObserver<LeaseKeepAliveResponse>() {
                  @Override
                  public void onNext(LeaseKeepAliveResponse r) {
                    if (r.getTTL() <= 0) {
                      serial.execute(
                          () -> kept.lost(
                              RecoveryCause.LEASE_EXPIRED, "keepalive answered TTL " + r.getTTL(), null));
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
    return kept;
  }

  /**
   * Revokes {@code lease} while closing, within {@code budget} (at most the operation timeout).
   * Never fails: the outcome is logged, and a lease not revoked expires within the TTL.
   */
  CompletableFuture<Void> revokeOnClose(Client client, long lease, Duration budget) {
    Duration timeout = budget.compareTo(operationTimeout) < 0 ? budget : operationTimeout;
    if (timeout.isNegative() || timeout.isZero()) {
      logger.warn(
          "No time left to revoke lease {} of {}; the key expires within {}s",
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
                    "Could not revoke lease {} of {}; the key expires within {}s: {}",
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

  private static String message(Throwable t) {
    Throwable c = EtcdErrors.unwrap(t);
    return c instanceof RegistryException ? c.getMessage() : String.valueOf(c);
  }

  /** One lease being kept alive. Confined to the serial executor, apart from construction. */
  final class KeptAlive implements AutoCloseable {
    private final long lease;
    private final LossListener listener;
    @Nullable private CloseableClient stream;
    private boolean done;

    private KeptAlive(long lease, LossListener listener) {
      this.lease = lease;
      this.listener = listener;
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
      // the stream itself after 500 ms; if no answer arrives within the TTL it ends the keepalive
      // with onCompleted, which is when the lease counts as lost.
      logger.info(
          "Keepalive stream of lease {} ({}) failed; jetcd reopens it: {}",
          Long.toHexString(lease), who, message(t));
    }

    private void lost(RecoveryCause why, String reason, @Nullable Throwable cause) {
      if (done) {
        return;
      }
      done = true;
      listener.onLeaseLost(why, reason, cause);
    }

    /** Stops the keepalive; later callbacks are ignored. Does not revoke. */
    @Override
    public void close() {
      done = true;
      if (stream != null) {
        stream.close();
        stream = null;
      }
    }
  }
}
