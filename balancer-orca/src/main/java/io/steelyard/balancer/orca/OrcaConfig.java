package io.steelyard.balancer.orca;

import static java.util.Objects.requireNonNull;

import com.google.common.collect.ImmutableSet;
import io.grpc.NameResolver.ConfigOrError;
import io.grpc.Status;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.ToLongFunction;
import javax.annotation.concurrent.Immutable;

/**
 * The parsed config of {@code weighted_least_request_orca}: every field of {@code
 * weighted_least_request} ({@link WeightedPolicyConfig}) plus the out-of-band reporting switch
 * and period, named as in grpc-java's {@code weighted_round_robin}.
 */
@Immutable
final class OrcaConfig {

  static final String FIELD_ENABLE_OOB = "enableOobLoadReport";
  static final String FIELD_OOB_PERIOD = "oobReportingPeriod";

  /** Every field this policy reads besides the shared ones: its own and the least-request ones. */
  static final Set<String> FIELDS =
      ImmutableSet.<String>builder()
          .addAll(WeightedPolicyConfig.LEAST_REQUEST_FIELDS)
          .add(FIELD_ENABLE_OOB, FIELD_OOB_PERIOD)
          .build();

  /** Default 10 s, as grpc-java's {@code weighted_round_robin}. */
  static final long DEFAULT_OOB_PERIOD_NANOS = TimeUnit.SECONDS.toNanos(10);

  static final OrcaConfig DEFAULT =
      new OrcaConfig(WeightedPolicyConfig.DEFAULT, false, DEFAULT_OOB_PERIOD_NANOS);

  final WeightedPolicyConfig base;
  final boolean enableOob;
  final long oobPeriodNanos;

  OrcaConfig(WeightedPolicyConfig base, boolean enableOob, long oobPeriodNanos) {
    this.base = requireNonNull(base, "base");
    this.enableOob = enableOob;
    this.oobPeriodNanos = oobPeriodNanos;
  }

  /**
   * Parses the raw JSON config: this policy's own fields here, the rest with {@code base} (which
   * skips ours, ignores unknown ones with a warning, and names the policy and field in errors).
   * {@code durationNanos} reads a protobuf JSON duration, -1 when it is not one. Never throws.
   */
  static ConfigOrError parse(
      String policyName,
      Map<String, ?> rawConfig,
      Function<Map<String, ?>, ConfigOrError> base,
      ToLongFunction<Object> durationNanos) {
    if (rawConfig == null) {
      return ConfigOrError.fromConfig(DEFAULT);
    }
    boolean enableOob = false;
    long period = DEFAULT_OOB_PERIOD_NANOS;
    if (rawConfig.containsKey(FIELD_ENABLE_OOB)) {
      Object value = rawConfig.get(FIELD_ENABLE_OOB);
      if (!(value instanceof Boolean)) {
        return error(policyName, FIELD_ENABLE_OOB, value + " (expected: true or false)");
      }
      enableOob = (Boolean) value;
    }
    if (rawConfig.containsKey(FIELD_OOB_PERIOD)) {
      Object value = rawConfig.get(FIELD_OOB_PERIOD);
      period = durationNanos.applyAsLong(value);
      if (period <= 0) {
        return error(
            policyName, FIELD_OOB_PERIOD, value + " (expected: a duration > 0s, e.g. \"10s\")");
      }
    }
    ConfigOrError parsed = base.apply(rawConfig);
    if (parsed.getError() != null) {
      return parsed;
    }
    return ConfigOrError.fromConfig(
        new OrcaConfig((WeightedPolicyConfig) parsed.getConfig(), enableOob, period));
  }

  private static ConfigOrError error(String policyName, String field, String message) {
    return ConfigOrError.fromError(
        Status.UNAVAILABLE.withDescription(policyName + "." + field + ": " + message));
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof OrcaConfig)) {
      return false;
    }
    OrcaConfig that = (OrcaConfig) o;
    return base.equals(that.base)
        && enableOob == that.enableOob
        && oobPeriodNanos == that.oobPeriodNanos;
  }

  @Override
  public int hashCode() {
    return Objects.hash(base, enableOob, oobPeriodNanos);
  }

  @Override
  public String toString() {
    return "OrcaConfig{" + base + ", enableOobLoadReport=" + enableOob + ", oobReportingPeriodNanos="
        + oobPeriodNanos + "}";
  }
}
