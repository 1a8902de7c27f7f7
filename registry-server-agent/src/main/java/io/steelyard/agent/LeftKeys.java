package io.steelyard.agent;

import io.etcd.jetcd.Client;
import io.steelyard.registry.internal.Backoff;
import io.steelyard.registry.internal.EtcdCalls;
import io.steelyard.registry.internal.EtcdErrors;
import io.steelyard.registry.internal.RetryPolicy;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The keys of registrations that leave a {@link LeaseShare} while others keep its lease: each is
 * deleted where one of the share's leases still holds it ({@link OwnKey#deleteIfHeldBy}, guarded),
 * not by revoking the lease. A delete that fails is tried again in the background, with the
 * {@link RetryPolicy}'s delays, for as long as the share holds a lease the key may be on; once it
 * holds none, the key went with the lease.
 *
 * <p>Threading: called on the share's serial executor; its work comes back there.
 */
final class LeftKeys {

  private static final Logger logger = LoggerFactory.getLogger(LeftKeys.class);

  private final String who;
  private final ScheduledExecutorService scheduler;
  private final Executor serial;
  private final Duration operationTimeout;
  private final Backoff backoff;
  private final Supplier<Client> client;
  /** The leases the share still holds (live and stale); empty once they are revoked or lost. */
  private final Supplier<Set<Long>> held;

  LeftKeys(
      String who, ScheduledExecutorService scheduler, Executor serial, Duration operationTimeout,
      Backoff backoff, Supplier<Client> client, Supplier<Set<Long>> held) {
    this.who = who;
    this.scheduler = scheduler;
    this.serial = serial;
    this.operationTimeout = operationTimeout;
    this.backoff = backoff;
    this.client = client;
    this.held = held;
  }

  /**
   * Deletes {@code key} within about {@code budget}; on failure (or no budget left) goes on in
   * the background. Completes on serial once the first try is over; never fails.
   */
  CompletableFuture<Void> delete(OwnKey key, Duration budget) {
    RetryPolicy retries = RegistrationDefaults.retryPolicy(backoff);
    Duration timeout = budget.compareTo(operationTimeout) < 0 ? budget : operationTimeout;
    if (timeout.isNegative() || timeout.isZero()) {
      later(key, retries, retries.nextDelayNanos());
      return CompletableFuture.completedFuture(null);
    }
    return key.deleteIfHeldBy(new EtcdCalls(timeout, scheduler::schedule), client.get(), held.get())
        .handleAsync(
            (deleted, t) -> {
              if (t != null) {
                logger.warn(
                    "Could not delete {} ({}); retrying in the background while the lease lives: {}",
                    key, who, EtcdErrors.message(t));
                later(key, retries, retries.failed("delete " + key, t).delayNanos());
              } else if (deleted) {
                logger.info("Deregistered {}: deleted it; the lease stays for the other registrations", key);
              } else {
                logger.info("Deregistered {}: it was no longer held by {}'s lease", key, who);
              }
              return null;
            },
            serial);
  }

  private void later(OwnKey key, RetryPolicy retries, long delayNanos) {
    scheduler.schedule(
        () -> RegistrationScheduler.post(serial, () -> {
          Set<Long> ours = held.get();
          if (ours.isEmpty()) {
            return; // the leases were revoked, or are lost: the key is gone with them
          }
          key.deleteIfHeldBy(new EtcdCalls(operationTimeout, scheduler::schedule), client.get(), ours)
              .whenCompleteAsync(
                  (deleted, t) -> {
                    if (t != null) {
                      later(key, retries, retries.failed("delete " + key, t).delayNanos());
                    } else {
                      logger.info("Deleted {} left behind by a closed registration", key);
                    }
                  },
                  serial);
        }, logger, "lease", who),
        delayNanos,
        TimeUnit.NANOSECONDS);
  }
}
