package io.steelyard.discovery;

import java.util.concurrent.TimeUnit;

/**
 * The watchers' defaults and fixed tunings, in one place below every class that uses them: {@link
 * WatcherConfig}, the watcher and its retry read them here, and {@link ServiceWatcher} publishes
 * the ones a user may set, with their units.
 */
final class WatcherDefaults {

  /** Coalescing (throttle) window, in milliseconds. */
  static final long DEBOUNCE_MILLIS = 10;
  /** Interval of the safety-net re-list, in minutes. */
  static final long RELIST_INTERVAL_MINUTES = 5;
  /** First retry delay while etcd is unreachable, in milliseconds (then doubling). */
  static final long BACKOFF_INITIAL_MILLIS = 200;
  /** Longest retry delay while etcd is unreachable, in milliseconds; a refusal waits this long. */
  static final long BACKOFF_MAX_MILLIS = 5_000;
  /** Each retry waits its backoff step ±25%, so a fleet of clients does not reconnect in step. */
  static final double BACKOFF_JITTER = 0.25;
  /** How long a listing, or a watch's confirmation, may take before the attempt counts as failed. */
  static final long LIST_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(5);
  /** Consecutive failed watch attempts after which the watcher re-lists rather than resumes. */
  static final int RELIST_AFTER_WATCH_FAILURES = 3;
  /** Consecutive failures after which the client is renewed (rate-limited by its source). */
  static final int RENEW_CLIENT_AFTER_FAILURES = 2;

  private WatcherDefaults() {}
}
