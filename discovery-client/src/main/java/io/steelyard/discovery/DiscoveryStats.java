package io.steelyard.discovery;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Process-wide counters of the discovery client, cheap to read from any thread; meant for a
 * metrics gauge or a health page.
 *
 * <pre>{@code
 * registry.gauge("steelyard.discovery.watches", DiscoveryStats::activeWatches);
 * registry.gauge("steelyard.discovery.malformed", DiscoveryStats::malformedValues);
 * }</pre>
 */
public final class DiscoveryStats {

  static final AtomicInteger ACTIVE_WATCHES = new AtomicInteger();
  static final AtomicInteger OPEN_ETCD_WATCHES = new AtomicInteger();
  static final AtomicInteger ETCD_CLIENTS = new AtomicInteger();
  static final AtomicInteger STALE_WATCHES = new AtomicInteger();
  static final AtomicLong MALFORMED = new AtomicLong();

  private DiscoveryStats() {}

  /** Shared watchers alive: one per (etcd cluster, key layout, service), whatever the users. */
  public static int activeWatches() {
    return ACTIVE_WATCHES.get();
  }

  /**
   * jetcd watch streams currently open. Equals {@link #activeWatches()} when every watcher is
   * healthy; lower while some wait to list or to retry.
   */
  public static int openEtcdWatches() {
    return OPEN_ETCD_WATCHES.get();
  }

  /** Shared jetcd clients alive: one per distinct etcd connection. */
  public static int etcdClients() {
    return ETCD_CLIENTS.get();
  }

  /** Watchers currently serving a stale view because etcd is unreachable. */
  public static int staleWatches() {
    return STALE_WATCHES.get();
  }

  /** How long the stalest watcher has been stale; zero when every watcher is fresh. */
  public static Duration maxStaleness() {
    long now = System.currentTimeMillis();
    long max = 0;
    for (PrefixWatcher w : WatchRegistry.SHARED.watchers()) {
      long since = w.staleSinceMillis();
      if (since != 0) {
        max = Math.max(max, now - since);
      }
    }
    return Duration.ofMillis(max);
  }

  /** Values skipped since start because they could not be decoded, counted once per key version. */
  public static long malformedValues() {
    return MALFORMED.get();
  }
}
