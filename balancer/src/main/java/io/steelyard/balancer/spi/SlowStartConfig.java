package io.steelyard.balancer.spi;

import static com.google.common.base.Preconditions.checkArgument;

import com.google.common.collect.ImmutableSortedSet;
import java.util.Objects;
import java.util.Set;
import javax.annotation.concurrent.Immutable;

/**
 * The {@code slowStart} option every weighted policy accepts, as Envoy's {@code
 * slow_start_config}: an endpoint that starts ramping gets {@code weight × max(minWeightPercent /
 * 100, (t / window)^(1 / aggression))} at {@code t} after the ramp began, until {@code window}
 * has passed. The balancer begins a ramp when an endpoint becomes usable after a gap (new, back
 * from a failure, undrained), not for those of the channel's first resolution; see {@code
 * docs/balancer.md}.
 *
 * <pre>{@code
 * {"weighted_random": {"slowStart": {"window": "30s", "aggression": 1.0, "minWeightPercent": 10}}}
 * }</pre>
 */
@Immutable
public final class SlowStartConfig {

  /** The option's name in a policy's config. */
  public static final String FIELD = "slowStart";

  /** Required: how long a ramp lasts, a protobuf JSON duration {@code > 0s}. */
  public static final String FIELD_WINDOW = "window";

  /** Optional, default {@value #DEFAULT_AGGRESSION}: {@code > 0}; above 1 ramps faster early. */
  public static final String FIELD_AGGRESSION = "aggression";

  /** Optional, default {@value #DEFAULT_MIN_WEIGHT_PERCENT}: the ramp's floor, 1..100. */
  public static final String FIELD_MIN_WEIGHT_PERCENT = "minWeightPercent";

  /** As Envoy: a linear ramp. */
  public static final double DEFAULT_AGGRESSION = 1.0;

  /** As Envoy: a ramping endpoint never gets less than a tenth of its weight. */
  public static final int DEFAULT_MIN_WEIGHT_PERCENT = 10;

  /** Largest aggression accepted: beyond it the ramp is a step in all but name. */
  public static final double MAX_AGGRESSION = 100.0;

  /** The fields of the {@code slowStart} object. */
  public static final Set<String> FIELDS =
      ImmutableSortedSet.of(FIELD_WINDOW, FIELD_AGGRESSION, FIELD_MIN_WEIGHT_PERCENT);

  private final long windowNanos;
  private final double aggression;
  private final int minWeightPercent;

  /**
   * A ramp over {@code windowNanos} ({@code > 0}) with {@code aggression} ({@code > 0, <= 100})
   * and a floor of {@code minWeightPercent} ({@code 1..100}).
   */
  public SlowStartConfig(long windowNanos, double aggression, int minWeightPercent) {
    checkArgument(windowNanos > 0, "window: %s ns (expected: > 0)", windowNanos);
    checkArgument(
        aggression > 0 && aggression <= MAX_AGGRESSION,
        "aggression: %s (expected: > 0 and <= %s)",
        aggression,
        MAX_AGGRESSION);
    checkArgument(
        minWeightPercent >= 1 && minWeightPercent <= 100,
        "minWeightPercent: %s (expected: 1..100)",
        minWeightPercent);
    this.windowNanos = windowNanos;
    this.aggression = aggression;
    this.minWeightPercent = minWeightPercent;
  }

  public long windowNanos() {
    return windowNanos;
  }

  public double aggression() {
    return aggression;
  }

  public int minWeightPercent() {
    return minWeightPercent;
  }

  /**
   * The share of its weight an endpoint gets {@code elapsedNanos} after its ramp began: {@code
   * max(minWeightPercent / 100, (elapsed / window)^(1 / aggression))}, 1 from the window's end.
   */
  public double factor(long elapsedNanos) {
    if (elapsedNanos >= windowNanos) {
      return 1.0;
    }
    double progress = Math.max(0, elapsedNanos) / (double) windowNanos;
    double ramp = aggression == 1.0 ? progress : Math.pow(progress, 1.0 / aggression);
    return Math.max(minWeightPercent / 100.0, ramp);
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof SlowStartConfig)) {
      return false;
    }
    SlowStartConfig that = (SlowStartConfig) o;
    return windowNanos == that.windowNanos
        && Double.compare(aggression, that.aggression) == 0
        && minWeightPercent == that.minWeightPercent;
  }

  @Override
  public int hashCode() {
    return Objects.hash(windowNanos, aggression, minWeightPercent);
  }

  @Override
  public String toString() {
    return "SlowStartConfig{windowNanos="
        + windowNanos
        + ", aggression="
        + aggression
        + ", minWeightPercent="
        + minWeightPercent
        + "}";
  }
}
