package io.steelyard.balancer.internal;

import static com.google.common.base.Preconditions.checkArgument;

import io.grpc.NameResolver.ConfigOrError;
import io.grpc.Status;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import javax.annotation.concurrent.Immutable;

/**
 * The {@code slowStart} option every weighted policy accepts, as Envoy's {@code
 * slow_start_config}: an endpoint that starts ramping gets {@code weight × max(minWeightPercent /
 * 100, (t / window)^(1 / aggression))} at {@code t} after the ramp began, until {@code window}
 * has passed. When a ramp begins, and when it does not, is decided by {@link SlowStart}.
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

  private static final Set<String> FIELDS =
      Set.of(FIELD_WINDOW, FIELD_AGGRESSION, FIELD_MIN_WEIGHT_PERCENT);

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

  /**
   * Parses the raw {@code slowStart} value of {@code policyName}'s config; errors name {@code
   * policyName.slowStart.field}.
   */
  static ConfigOrError parse(String policyName, Object raw) {
    String prefix = policyName + "." + FIELD;
    if (!(raw instanceof Map)) {
      return error(prefix, raw + " (expected: an object with \"window\")");
    }
    Map<?, ?> map = (Map<?, ?>) raw;
    for (Object key : map.keySet()) {
      if (!FIELDS.contains(key)) {
        return error(
            prefix + "." + key,
            "unknown field (expected: one of ["
                + FIELD_AGGRESSION
                + ", "
                + FIELD_MIN_WEIGHT_PERCENT
                + ", "
                + FIELD_WINDOW
                + "])");
      }
    }
    Object window = map.get(FIELD_WINDOW);
    long windowNanos = WeightedPolicyConfig.parseDuration(window);
    if (windowNanos <= 0) {
      return error(
          prefix + "." + FIELD_WINDOW,
          (window == null ? "missing" : window) + " (expected: a duration > 0s, e.g. \"30s\")");
    }
    double aggression = DEFAULT_AGGRESSION;
    if (map.containsKey(FIELD_AGGRESSION)) {
      Object value = map.get(FIELD_AGGRESSION);
      if (!(value instanceof Number)
          || !(((Number) value).doubleValue() > 0)
          || ((Number) value).doubleValue() > MAX_AGGRESSION) {
        return error(
            prefix + "." + FIELD_AGGRESSION,
            value + " (expected: a number > 0 and <= " + MAX_AGGRESSION + ")");
      }
      aggression = ((Number) value).doubleValue();
    }
    int minWeightPercent = DEFAULT_MIN_WEIGHT_PERCENT;
    if (map.containsKey(FIELD_MIN_WEIGHT_PERCENT)) {
      Object value = map.get(FIELD_MIN_WEIGHT_PERCENT);
      if (!(value instanceof Number)
          || ((Number) value).doubleValue() != Math.rint(((Number) value).doubleValue())
          || ((Number) value).doubleValue() < 1
          || ((Number) value).doubleValue() > 100) {
        return error(
            prefix + "." + FIELD_MIN_WEIGHT_PERCENT, value + " (expected: a whole number 1..100)");
      }
      minWeightPercent = ((Number) value).intValue();
    }
    return ConfigOrError.fromConfig(new SlowStartConfig(windowNanos, aggression, minWeightPercent));
  }

  private static ConfigOrError error(String field, String message) {
    return ConfigOrError.fromError(Status.UNAVAILABLE.withDescription(field + ": " + message));
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
