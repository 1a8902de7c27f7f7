package io.steelyard.balancer.spi;

import io.steelyard.registry.EndpointWeights;
import java.util.concurrent.TimeUnit;

/**
 * The slow-start weight function of every steelyard balancer: given each endpoint's effective
 * weight ({@link EffectiveWeights}) and when its ramp began, the integer weights to pick with.
 * The weighted gRPC policies apply it, and so do the integrations that pick outside gRPC
 * (steelyard's Spring Cloud LoadBalancer); when a ramp begins is each caller's own rule (see {@code
 * docs/balancer.md}, "Slow start").
 *
 * <p><b>What.</b> An endpoint ramps while its effective weight is positive and less than a
 * {@link SlowStartConfig#windowNanos() window} has passed since its ramp began. Weights are
 * integers, so while any endpoint ramps every weight is multiplied by {@value #SCALE} (less when
 * that would exceed {@link EndpointWeights#MAX_WEIGHT}), and a ramping endpoint's by {@link
 * SlowStartConfig#factor} as well, at least 1: a weight-1 endpoint ramps in 1 % steps.
 * Proportions between the endpoints that do not ramp are unchanged, and when no endpoint ramps
 * the weights are left as they are. A picker built while ramps run is good for {@link
 * #refreshDelayNanos}, {@code max(window / 20, 250 ms)}: then it is built again with the ramps'
 * new factors.
 *
 * <p><b>Threading.</b> Pure functions: thread-safe, no state.
 *
 * <pre>{@code
 * SlowStartConfig slowStart = new SlowStartConfig(TimeUnit.SECONDS.toNanos(30), 1.0, 10);
 * int[] weights = {5, 5};                     // effective weights
 * long[] rampStarts = {SlowStartWeights.NOT_RAMPING, now - TimeUnit.SECONDS.toNanos(15)};
 * if (SlowStartWeights.ramping(slowStart, weights, rampStarts, now)) {
 *   int scale = SlowStartWeights.apply(slowStart, weights, rampStarts, now);  // 100
 *   // weights is now {500, 250}; build the next picker in:
 *   long delayNanos = SlowStartWeights.refreshDelayNanos(slowStart);          // 1.5 s
 * }
 * }</pre>
 */
public final class SlowStartWeights {

  /** Weight multiplier while a ramp runs: the ramp's resolution for a weight-1 endpoint. */
  public static final int SCALE = 100;

  /** Shortest interval between two picker rebuilds while ramps run. */
  public static final long MIN_REFRESH_NANOS = TimeUnit.MILLISECONDS.toNanos(250);

  /** Rebuilds per window at most: the ramp moves in about 5 % steps. */
  public static final int REFRESHES_PER_WINDOW = 20;

  /** A ramp start meaning "this endpoint is not ramping". */
  public static final long NOT_RAMPING = Long.MIN_VALUE;

  private SlowStartWeights() {}

  /**
   * Whether any endpoint ramps at {@code nowNanos}: a positive {@code effective[i]} and a {@code
   * rampStartNanos[i]} (parallel; {@link #NOT_RAMPING} for none) less than the window before.
   */
  public static boolean ramping(
      SlowStartConfig config, int[] effective, long[] rampStartNanos, long nowNanos) {
    for (int i = 0; i < effective.length; i++) {
      if (ramps(config, effective[i], rampStartNanos[i], nowNanos)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Applies the ramps at {@code nowNanos} to {@code effective} (changed in place; {@code
   * rampStartNanos} parallel, {@link #NOT_RAMPING} for an endpoint that does not ramp) and returns
   * the factor every endpoint that does not ramp was multiplied by: 1, weights untouched, when no
   * endpoint ramps ({@link #ramping}), else up to {@value #SCALE}.
   */
  public static int apply(
      SlowStartConfig config, int[] effective, long[] rampStartNanos, long nowNanos) {
    if (!ramping(config, effective, rampStartNanos, nowNanos)) {
      return 1;
    }
    int max = 0;
    for (int w : effective) {
      max = Math.max(max, w);
    }
    int scale = Math.max(1, Math.min(SCALE, EndpointWeights.MAX_WEIGHT / max));
    for (int i = 0; i < effective.length; i++) {
      if (ramps(config, effective[i], rampStartNanos[i], nowNanos)) {
        double factor = config.factor(nowNanos - rampStartNanos[i]);
        effective[i] = (int) Math.max(1, Math.round((double) effective[i] * scale * factor));
      } else {
        effective[i] *= scale;
      }
    }
    return scale;
  }

  /** How long a picker built while ramps run stays good: {@code max(window / 20, 250 ms)}. */
  public static long refreshDelayNanos(SlowStartConfig config) {
    return Math.max(MIN_REFRESH_NANOS, config.windowNanos() / REFRESHES_PER_WINDOW);
  }

  private static boolean ramps(
      SlowStartConfig config, int effective, long rampStartNanos, long nowNanos) {
    return effective > 0
        && rampStartNanos != NOT_RAMPING
        && nowNanos - rampStartNanos < config.windowNanos();
  }
}
