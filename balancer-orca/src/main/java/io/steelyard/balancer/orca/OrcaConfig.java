package io.steelyard.balancer.orca;

import static java.util.Objects.requireNonNull;

import com.google.common.collect.ImmutableSortedSet;
import io.grpc.NameResolver.ConfigOrError;
import io.grpc.Status;
import io.steelyard.balancer.internal.WeightedPolicy;
import io.steelyard.balancer.internal.WeightedPolicyConfig;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
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

  /** Parses the raw JSON config; never throws (errors name the policy and field). */
  static ConfigOrError parse(String policyName, Map<String, ?> rawConfig) {
    if (rawConfig == null) {
      return ConfigOrError.fromConfig(DEFAULT);
    }
    Map<String, Object> rest = new HashMap<>(rawConfig);
    boolean enableOob = false;
    long period = DEFAULT_OOB_PERIOD_NANOS;
    if (rest.containsKey(FIELD_ENABLE_OOB)) {
      Object value = rest.remove(FIELD_ENABLE_OOB);
      if (!(value instanceof Boolean)) {
        return error(policyName, FIELD_ENABLE_OOB, value + " (expected: true or false)");
      }
      enableOob = (Boolean) value;
    }
    if (rest.containsKey(FIELD_OOB_PERIOD)) {
      Object value = rest.remove(FIELD_OOB_PERIOD);
      period = WeightedPolicyConfig.parseDuration(value);
      if (period <= 0) {
        return error(
            policyName, FIELD_OOB_PERIOD, value + " (expected: a duration > 0s, e.g. \"10s\")");
      }
    }
    for (String field : rest.keySet()) {
      if (!WeightedPolicy.WEIGHTED_LEAST_REQUEST.fields().contains(field)) {
        return error(
            policyName,
            field,
            "unknown field (expected: one of "
                + ImmutableSortedSet.<String>naturalOrder()
                    .addAll(WeightedPolicy.WEIGHTED_LEAST_REQUEST.fields())
                    .add(FIELD_ENABLE_OOB, FIELD_OOB_PERIOD)
                    .build()
                + ")");
      }
    }
    ConfigOrError base = WeightedPolicy.WEIGHTED_LEAST_REQUEST.parseConfig(policyName, rest);
    if (base.getError() != null) {
      return base;
    }
    return ConfigOrError.fromConfig(
        new OrcaConfig((WeightedPolicyConfig) base.getConfig(), enableOob, period));
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
