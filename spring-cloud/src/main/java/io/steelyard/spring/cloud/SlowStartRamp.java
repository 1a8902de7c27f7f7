package io.steelyard.spring.cloud;

import static com.google.common.base.Preconditions.checkArgument;

import io.steelyard.balancer.spi.SlowStartConfig;
import java.time.Duration;

/**
 * Slow start for Spring Cloud LoadBalancer: the balancer's ramp ({@link SlowStartConfig}, as
 * Envoy's {@code slow_start_config}) and how often a picker is rebuilt while instances ramp.
 */
final class SlowStartRamp {

  /** Shortest interval between two rebuilds of a picker while ramps run (as the balancer). */
  static final long MIN_REFRESH_NANOS = 250_000_000L;

  /** Rebuilds per window at most: the ramp moves in about 5 % steps (as the balancer). */
  static final int REFRESHES_PER_WINDOW = 20;

  private final SlowStartConfig config;

  SlowStartRamp(Duration window, double aggression, int minWeightPercent) {
    checkArgument(!window.isNegative() && !window.isZero(), "window: %s (expected: > 0s)", window);
    this.config = new SlowStartConfig(window.toNanos(), aggression, minWeightPercent);
  }

  long windowNanos() {
    return config.windowNanos();
  }

  /** The share of its weight an instance gets {@code elapsedNanos} into its ramp; 1 after it. */
  double factor(long elapsedNanos) {
    return config.factor(elapsedNanos);
  }

  /** How long a picker built during a ramp stays good: max(window / 20, 250 ms). */
  long refreshNanos() {
    return Math.max(MIN_REFRESH_NANOS, config.windowNanos() / REFRESHES_PER_WINDOW);
  }
}
