package io.steelyard.spring.cloud;

import static com.google.common.base.Preconditions.checkArgument;

import java.time.Duration;

/**
 * ADAPTER, to be replaced by the balancer's {@code SlowStartConfig} once that is public API (it
 * is a public class, but in the balancer's {@code internal} package, which no other module may
 * import): the same ramp, as Envoy's {@code slow_start_config}. An instance that starts ramping
 * gets {@code weight × max(minWeightPercent / 100, (t / window)^(1 / aggression))} at {@code t}
 * after its ramp began, until {@code window} has passed.
 */
final class SlowStartRamp {

  /** Shortest interval between two rebuilds of a picker while ramps run (as the balancer). */
  static final long MIN_REFRESH_NANOS = 250_000_000L;

  /** Rebuilds per window at most: the ramp moves in about 5 % steps (as the balancer). */
  static final int REFRESHES_PER_WINDOW = 20;

  private final long windowNanos;
  private final double aggression;
  private final int minWeightPercent;

  SlowStartRamp(Duration window, double aggression, int minWeightPercent) {
    checkArgument(!window.isNegative() && !window.isZero(), "window: %s (expected: > 0s)", window);
    checkArgument(aggression > 0 && aggression <= 100,
        "aggression: %s (expected: > 0 and <= 100)", aggression);
    checkArgument(minWeightPercent >= 1 && minWeightPercent <= 100,
        "minWeightPercent: %s (expected: 1..100)", minWeightPercent);
    this.windowNanos = window.toNanos();
    this.aggression = aggression;
    this.minWeightPercent = minWeightPercent;
  }

  long windowNanos() {
    return windowNanos;
  }

  /** The share of its weight an instance gets {@code elapsedNanos} into its ramp; 1 after it. */
  double factor(long elapsedNanos) {
    if (elapsedNanos >= windowNanos) {
      return 1.0;
    }
    double progress = Math.max(0, elapsedNanos) / (double) windowNanos;
    double ramp = aggression == 1.0 ? progress : Math.pow(progress, 1.0 / aggression);
    return Math.max(minWeightPercent / 100.0, ramp);
  }

  /** How long a picker built during a ramp stays good: max(window / 20, 250 ms). */
  long refreshNanos() {
    return Math.max(MIN_REFRESH_NANOS, windowNanos / REFRESHES_PER_WINDOW);
  }
}
