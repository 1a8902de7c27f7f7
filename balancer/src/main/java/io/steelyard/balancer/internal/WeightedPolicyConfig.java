package io.steelyard.balancer.internal;

import static java.util.Objects.requireNonNull;

import com.google.common.collect.ImmutableSortedSet;
import io.grpc.NameResolver.ConfigOrError;
import io.grpc.Status;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import javax.annotation.concurrent.Immutable;

/**
 * The parsed {@code loadBalancingConfig} entry of a weighted policy, e.g. the {@code {}} in
 * {@code {"loadBalancingConfig": [{"weighted_random": {}}]}}.
 *
 * <p>The provider parses the raw JSON map here, the channel hands the result to the balancer in
 * {@code ResolvedAddresses.getLoadBalancingPolicyConfig()}, and input this class does not
 * understand becomes a {@link ConfigOrError} naming the offending field and value, e.g. {@code
 * "weighted_random.panicThresholdPercent: 150 (expected: a whole number 0..100)"}.
 *
 * <p>Options, each off by default:
 *
 * <ul>
 *   <li>{@code panicThresholdPercent} (0..100, default 0 = off): when fewer than this share of the
 *       endpoints are usable (READY, not drained), pick among every endpoint that still has a
 *       connection, as if none were excluded; see {@link EffectiveWeights#panic}.
 * </ul>
 *
 * <p>Options to come (slow start, subset size, a least-request policy's choice count) become
 * fields here, each with a builder setter and a validation message in the same form.
 *
 * <p><b>Unknown fields are rejected</b>, not ignored: a misspelt option ({@code "slowstart"})
 * that silently did nothing would leave an operator believing it is on. The cost is that a
 * config written for a newer steelyard fails to parse in an older client; grpc-java then keeps
 * the channel's last good service config (gRFC A21), and a bad {@code defaultServiceConfig}
 * fails {@code build()} at once.
 */
@Immutable
public final class WeightedPolicyConfig {

  /** The config of {@code {}}, and what the balancer assumes when the channel passes none. */
  public static final WeightedPolicyConfig DEFAULT = builder().build();

  static final String PANIC_THRESHOLD_PERCENT = "panicThresholdPercent";

  /** Field names every weighted policy accepts. */
  private static final Set<String> FIELDS = ImmutableSortedSet.of(PANIC_THRESHOLD_PERCENT);

  private final int panicThresholdPercent;

  private WeightedPolicyConfig(Builder builder) {
    this.panicThresholdPercent = builder.panicThresholdPercent;
  }

  /**
   * A config with every option off; e.g. {@code
   * WeightedPolicyConfig.builder().panicThresholdPercent(50).build()}.
   */
  public static Builder builder() {
    return new Builder();
  }

  /** Below this share of usable endpoints (percent), picks ignore exclusions; 0 means never. */
  public int panicThresholdPercent() {
    return panicThresholdPercent;
  }

  /**
   * Parses one policy's raw JSON config (Gson-style: maps, lists, strings, doubles, booleans).
   * Never throws: bad input is a {@link ConfigOrError} with an {@code UNAVAILABLE} status (gRFC
   * A54 keeps control-plane errors off the codes applications use) whose description names the
   * policy and the field.
   */
  static ConfigOrError parse(String policyName, Map<String, ?> rawConfig) {
    requireNonNull(policyName, "policyName");
    if (rawConfig == null) {
      return ConfigOrError.fromConfig(DEFAULT);
    }
    Builder builder = builder();
    for (String field : rawConfig.keySet()) {
      if (!FIELDS.contains(field)) {
        return ConfigOrError.fromError(
            Status.UNAVAILABLE.withDescription(
                String.format(
                    "%s.%s: unknown field (expected: %s)",
                    policyName,
                    field,
                    "one of " + FIELDS)));
      }
    }
    Object panic = rawConfig.get(PANIC_THRESHOLD_PERCENT);
    if (panic != null) {
      if (!(panic instanceof Number)
          || ((Number) panic).doubleValue() != Math.rint(((Number) panic).doubleValue())
          || ((Number) panic).doubleValue() < 0
          || ((Number) panic).doubleValue() > 100) {
        return ConfigOrError.fromError(
            Status.UNAVAILABLE.withDescription(
                String.format(
                    "%s.%s: %s (expected: a whole number 0..100)",
                    policyName, PANIC_THRESHOLD_PERCENT, panic)));
      }
      builder.panicThresholdPercent(((Number) panic).intValue());
    }
    WeightedPolicyConfig config = builder.build();
    return ConfigOrError.fromConfig(config.equals(DEFAULT) ? DEFAULT : config);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof WeightedPolicyConfig
        && panicThresholdPercent == ((WeightedPolicyConfig) o).panicThresholdPercent;
  }

  @Override
  public int hashCode() {
    return Objects.hash(panicThresholdPercent);
  }

  @Override
  public String toString() {
    return "WeightedPolicyConfig{panicThresholdPercent=" + panicThresholdPercent + "}";
  }

  /** Builds a {@link WeightedPolicyConfig}; every option starts off. */
  public static final class Builder {
    private int panicThresholdPercent;

    private Builder() {}

    /** See {@link WeightedPolicyConfig#panicThresholdPercent()}; 0..100, default 0 (off). */
    public Builder panicThresholdPercent(int percent) {
      if (percent < 0 || percent > 100) {
        throw new IllegalArgumentException(
            PANIC_THRESHOLD_PERCENT + ": " + percent + " (expected: 0..100)");
      }
      this.panicThresholdPercent = percent;
      return this;
    }

    public WeightedPolicyConfig build() {
      return new WeightedPolicyConfig(this);
    }
  }
}
