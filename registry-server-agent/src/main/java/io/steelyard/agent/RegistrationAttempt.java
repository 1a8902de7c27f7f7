package io.steelyard.agent;

import io.steelyard.registry.internal.EtcdCalls;
import io.steelyard.registry.internal.EtcdErrors;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.function.BooleanSupplier;
import java.util.function.IntFunction;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;
import javax.annotation.Nullable;

/**
 * One attempt to register a key: a lease from the {@link LeaseShare} (the live one, or one granted
 * now), then the key put on it ({@link OwnKey#put}, guarded by the mod revision last seen) with
 * the weight wanted once the lease is there, so that a weight set while the lease was granted
 * counts. A put that etcd refuses because it does not know the lease reports the lease lost to the
 * share, which tells every registration on it.
 *
 * <p>Threading: started and cancelled on the registration's serial executor; its future completes
 * there. Once {@code stopped} (the registration closes) it goes no further and its future never
 * completes: the close cancels the call in flight and leaves the share, which deletes the key or
 * revokes the lease.
 */
final class RegistrationAttempt {

  /** The key is on {@code lease} at mod revision {@code revision}, holding weight {@code weight}. */
  record Registered(long lease, long revision, int weight) {}

  private final LeaseShare share;
  private final LeaseShare.User user;
  private final OwnKey key;
  private final EtcdCalls calls;
  private final Executor serial;
  private final BooleanSupplier stopped;
  /** serial: the etcd call the attempt waits for. */
  @Nullable private CompletableFuture<?> inFlight;

  RegistrationAttempt(
      LeaseShare share, LeaseShare.User user, OwnKey key, EtcdCalls calls, Executor serial,
      BooleanSupplier stopped) {
    this.share = share;
    this.user = user;
    this.key = key;
    this.calls = calls;
    this.serial = serial;
    this.stopped = stopped;
  }

  /**
   * Acquires the lease, then puts {@code value} of the weight {@code weight} gives at that moment,
   * guarded by {@code guard}'s mod revision (read then too). Fails with the grant's or the put's
   * failure.
   */
  CompletableFuture<Registered> start(
      IntSupplier weight, IntFunction<byte[]> value, LongSupplier guard) {
    CompletableFuture<Registered> result = new CompletableFuture<>();
    CompletableFuture<Long> acquired = share.acquire(user);
    inFlight = acquired;
    acquired.whenCompleteAsync(
        (lease, t) -> {
          if (stopped.getAsBoolean()) {
            return;
          }
          if (t != null) {
            inFlight = null;
            result.completeExceptionally(t);
            return;
          }
          int w = weight.getAsInt();
          CompletableFuture<Long> put =
              key.put(calls, share.client(), value.apply(w), lease, guard.getAsLong());
          inFlight = put;
          put.whenCompleteAsync(
              (revision, t2) -> {
                if (stopped.getAsBoolean()) {
                  return;
                }
                inFlight = null;
                if (t2 == null) {
                  result.complete(new Registered(lease, revision, w));
                  return;
                }
                if (EtcdErrors.isLeaseNotFound(t2)) {
                  share.reportLost(
                      lease, RecoveryCause.LEASE_EXPIRED, "etcd refused a put with it: lease not found");
                }
                result.completeExceptionally(t2);
              },
              serial);
        },
        serial);
    return result;
  }

  /** Cancels the call in flight, if any (the registration closes). */
  void cancel() {
    if (inFlight != null) {
      inFlight.cancel(true);
      inFlight = null;
    }
  }
}
