package io.steelyard.discovery;

import static com.google.common.base.Preconditions.checkArgument;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * Timings of a watcher. Part of the sharing key: channels asking for different timings get
 * different watchers.
 */
record WatcherConfig(
    long debounceNanos,
    long relistIntervalNanos,
    long backoffInitialNanos,
    long backoffMaxNanos,
    long listTimeoutNanos) {

  /** The defaults ({@link WatcherDefaults}), as published with their units on {@link ServiceWatcher}. */
  static final WatcherConfig DEFAULTS =
      new WatcherConfig(
          TimeUnit.MILLISECONDS.toNanos(WatcherDefaults.DEBOUNCE_MILLIS),
          TimeUnit.MINUTES.toNanos(WatcherDefaults.RELIST_INTERVAL_MINUTES),
          TimeUnit.MILLISECONDS.toNanos(WatcherDefaults.BACKOFF_INITIAL_MILLIS),
          TimeUnit.MILLISECONDS.toNanos(WatcherDefaults.BACKOFF_MAX_MILLIS),
          WatcherDefaults.LIST_TIMEOUT_NANOS);

  WatcherConfig {
    checkArgument(debounceNanos >= 0, "debounce: %sns (expected: >= 0)", debounceNanos);
    checkArgument(relistIntervalNanos > 0, "relistInterval: %sns (expected: > 0)", relistIntervalNanos);
    checkArgument(backoffInitialNanos > 0, "backoffInitial: %sns (expected: > 0)", backoffInitialNanos);
    checkArgument(
        backoffMaxNanos >= backoffInitialNanos,
        "maxBackoff: %sns (expected: >= %sns)", backoffMaxNanos, backoffInitialNanos);
    checkArgument(listTimeoutNanos > 0, "listTimeout: %sns (expected: > 0)", listTimeoutNanos);
  }

  WatcherConfig withDebounce(Duration d) {
    checkArgument(!d.isNegative() && d.compareTo(Duration.ofSeconds(1)) <= 0,
        "debounce: %s (expected: 0..1s)", d);
    return new WatcherConfig(d.toNanos(), relistIntervalNanos, backoffInitialNanos, backoffMaxNanos, listTimeoutNanos);
  }

  WatcherConfig withRelistInterval(Duration d) {
    checkArgument(d.compareTo(Duration.ofSeconds(1)) >= 0, "relistInterval: %s (expected: >= 1s)", d);
    return new WatcherConfig(debounceNanos, d.toNanos(), backoffInitialNanos, backoffMaxNanos, listTimeoutNanos);
  }

  WatcherConfig withBackoff(Duration initial, Duration max) {
    checkArgument(!initial.isNegative() && !initial.isZero(), "backoff initial: %s (expected: > 0)", initial);
    checkArgument(max.compareTo(initial) >= 0, "backoff max: %s (expected: >= %s)", max, initial);
    return new WatcherConfig(debounceNanos, relistIntervalNanos, initial.toNanos(), max.toNanos(), listTimeoutNanos);
  }
}
