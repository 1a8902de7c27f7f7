package io.steelyard.discovery;

import java.time.Duration;

/**
 * Process-wide counters of the discovery client, cheap to read from any thread; meant for a
 * metrics gauge or a health page.
 *
 * <pre>{@code
 * registry.gauge("steelyard.discovery.watches", DiscoveryStats::activeWatches);
 * registry.gauge("steelyard.discovery.malformed", DiscoveryStats::malformedValues);
 * }</pre>
 *
 * <p>A view of the process-wide watch registry that every {@code etcd:} channel and every
 * {@link ServiceWatcher} share; it holds no state of its own.
 */
public final class DiscoveryStats {

  private DiscoveryStats() {}

  private static WatchStats stats() {
    return WatchRegistry.SHARED.stats();
  }

  /** Shared watchers alive: one per (etcd cluster, key layout, service), whatever the users. */
  public static int activeWatches() {
    return stats().activeWatches();
  }

  /**
   * jetcd watch streams currently open. Equals {@link #activeWatches()} when every watcher is
   * healthy; lower while some wait to list or to retry.
   */
  public static int openEtcdWatches() {
    return stats().openEtcdWatches();
  }

  /** Shared jetcd clients alive: one per distinct etcd connection. */
  public static int etcdClients() {
    return stats().etcdClients();
  }

  /** Watchers currently serving a stale view because etcd is unreachable. */
  public static int staleWatches() {
    return stats().staleWatches();
  }

  /** How long the stalest watcher has been stale; zero when every watcher is fresh. */
  public static Duration maxStaleness() {
    return WatchRegistry.SHARED.maxStaleness();
  }

  /** Values skipped since start because they could not be decoded, counted once per key version. */
  public static long malformedValues() {
    return stats().malformedValues();
  }
}
