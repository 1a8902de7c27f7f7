package io.steelyard.discovery;

import io.steelyard.registry.RegistryException;
import io.steelyard.registry.RegistryException.Kind;
import io.steelyard.registry.internal.Backoff;
import io.steelyard.registry.internal.RetryPolicy;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A watcher's failures and the staleness they cause: each failed list, watch or check is judged
 * by the one {@link RetryPolicy} (classified by code, never by message; backoff; client renewal
 * after {@value WatcherDefaults#RENEW_CLIENT_AFTER_FAILURES} failures in a row; the longest delay
 * after a refusal, which a new client would not fix unless it is TLS), marks the watcher stale
 * from its first failure until etcd answers again, and is logged: one WARN per stale period and
 * per change of failure kind, the rest at DEBUG.
 *
 * <p>Threading: confined to its watcher's serialized executor, except {@link #staleSinceMillis}
 * (volatile, read by stats and metrics).
 */
final class Staleness {

  /** A failure judged: the retry decision, and whether it made the watcher stale just now. */
  record Failed(RetryPolicy.Decision decision, boolean turnedStale) {}

  private static final Logger logger = LoggerFactory.getLogger(Staleness.class);

  private final String service;
  private final String endpoints;
  private final WatcherConfig config;
  private final Scheduler scheduler;
  private final WatchStats stats;
  private final RetryPolicy retries;
  @Nullable private Kind lastFailureKind; // of the current stale period, for logging
  @Nullable private Throwable lastError;
  private volatile long staleSinceMillis; // 0 = fresh

  Staleness(
      String service, String endpoints, WatcherConfig config, Scheduler scheduler, Random random,
      WatchStats stats) {
    this.service = service;
    this.endpoints = endpoints;
    this.config = config;
    this.scheduler = scheduler;
    this.stats = stats;
    this.retries =
        new RetryPolicy(
            new Backoff(
                Duration.ofNanos(config.backoffInitialNanos()),
                Duration.ofNanos(config.backoffMaxNanos()),
                WatcherDefaults.BACKOFF_JITTER,
                random),
            WatcherDefaults.RENEW_CLIENT_AFTER_FAILURES);
  }

  /** Milliseconds since epoch when etcd was lost, 0 when fresh. Any thread. */
  long staleSinceMillis() {
    return staleSinceMillis;
  }

  /** Seconds since etcd was lost, by the watcher's clock; 0 when fresh. Any thread. */
  double staleSeconds() {
    long since = staleSinceMillis;
    return since == 0 ? 0 : Math.max(0, scheduler.currentTimeMillis() - since) / 1000.0;
  }

  /** Failures in a row since etcd last answered. */
  int failures() {
    return retries.failures();
  }

  /** The last failure, until etcd answers; for a listener that comes before any listing. */
  @Nullable
  Throwable lastError() {
    return lastError;
  }

  /**
   * The {@code what} ("list", "watch") of the service failed with {@code err}: counts, decides,
   * marks stale and logs. {@code listed}, {@code known} and {@code revision} say what the watcher
   * serves meanwhile, for the log.
   */
  Failed failed(String what, Throwable err, boolean listed, int known, long revision) {
    RetryPolicy.Decision d = retries.failed(what + " " + service, err);
    RegistryException e = d.error();
    lastError = e;
    boolean turnedStale = staleSinceMillis == 0;
    if (turnedStale) {
      staleSinceMillis = Math.max(1, scheduler.currentTimeMillis());
      stats.staleWatches.incrementAndGet();
    }
    if (turnedStale || e.kind() != lastFailureKind) {
      log(what, e, listed, known, revision);
    } else {
      logger.debug("Retry {} of service {} failed again ({} consecutive): {}",
          what, service, d.failures(), e.getMessage());
    }
    lastFailureKind = e.kind();
    return new Failed(d, turnedStale);
  }

  /** etcd answered: the next failure is the first in a row. */
  void answered() {
    retries.reset();
    lastError = null;
  }

  /** etcd answered while stale: fresh again, logged once. Returns whether it was stale. */
  boolean recovered(long revision) {
    if (staleSinceMillis == 0) {
      return false;
    }
    long since = staleSinceMillis;
    staleSinceMillis = 0;
    lastFailureKind = null;
    stats.staleWatches.decrementAndGet();
    logger.info(
        "etcd at {} reachable again for service {} after {} ms stale; at revision {}",
        endpoints, service, Math.max(0, scheduler.currentTimeMillis() - since), revision);
    return true;
  }

  /** The watcher closes: it no longer counts as stale. */
  void close() {
    if (staleSinceMillis != 0) {
      staleSinceMillis = 0;
      stats.staleWatches.decrementAndGet();
    }
  }

  private void log(String what, RegistryException e, boolean listed, int known, long revision) {
    if (!e.kind().refused()) {
      if (listed) {
        logger.warn("Lost etcd at {} while watching service {}: {}; serving the last known {}"
                + " instances of revision {} until it recovers",
            endpoints, service, e.getMessage(), known, revision, e.getCause());
      } else {
        logger.warn("Cannot reach etcd at {} to list service {}: {}; no instances known yet,"
            + " retrying", endpoints, service, e.getMessage(), e.getCause());
      }
      return;
    }
    String hint = e.kind() == Kind.LIMIT && what.equals("list")
        ? "; a listing is paged down to one key per etcd response, and a key with its value is"
            + " over the client's inbound message limit (gRPC's default: 4 MiB) or, through etcd's"
            + " gRPC proxy, its send limit (--max-send-bytes, default 1.5 MiB)"
        : "";
    long retrySeconds = TimeUnit.NANOSECONDS.toSeconds(config.backoffMaxNanos());
    if (listed) {
      logger.warn("etcd at {} refused the {} of service {}: {}{}; serving the last known {}"
              + " instances of revision {}, retrying every ~{} s",
          endpoints, what, service, e.getMessage(), hint, known, revision, retrySeconds, e.getCause());
    } else {
      logger.warn("etcd at {} refused the {} of service {}: {}{}; no instances known yet,"
              + " retrying every ~{} s",
          endpoints, what, service, e.getMessage(), hint, retrySeconds, e.getCause());
    }
  }
}
