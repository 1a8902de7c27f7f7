package io.steelyard.balancer.internal;

import static java.util.Objects.requireNonNull;

import com.google.common.collect.ImmutableSortedSet;
import io.grpc.NameResolver.ConfigOrError;
import io.grpc.Status;
import java.util.Map;
import java.util.Set;
import javax.annotation.Nullable;
import javax.annotation.concurrent.Immutable;

/**
 * The parsed {@code loadBalancingConfig} entry of a weighted policy, e.g. the {@code {}} in
 * {@code {"loadBalancingConfig": [{"weighted_random": {}}]}}.
 *
 * <p>One option so far, deterministic subsetting ({@link SubsetOption}: {@code subsetSize},
 * {@code subsetClientId}); without it a valid config equals {@link #DEFAULT}. The parsing path: the provider parses the raw JSON map here, the channel hands the
 * result to the balancer in {@code ResolvedAddresses.getLoadBalancingPolicyConfig()}, and input
 * this class does not understand becomes a {@link ConfigOrError} naming the offending field.
 * Options to come (slow start, panic threshold, subset size, a least-request policy's choice
 * count) become fields here, each with a builder setter and a validation message in the form
 * {@code "weighted_random.slowStart.window: -1s (expected: > 0s)"}.
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
  public static final WeightedPolicyConfig DEFAULT = new WeightedPolicyConfig();

  /** Field names every weighted policy accepts. */
  private static final Set<String> FIELDS = ImmutableSortedSet.of(SubsetOption.SIZE, SubsetOption.CLIENT_ID);

  /** Deterministic subsetting ({@code subsetSize}, {@code subsetClientId}), or null: every endpoint. */
  @Nullable private final RendezvousSubset subset;

  private WeightedPolicyConfig() {
    this(null);
  }

  private WeightedPolicyConfig(@Nullable RendezvousSubset subset) {
    this.subset = subset;
  }

  /** The subset this client keeps, or null when {@code subsetSize} is not set. */
  @Nullable
  public RendezvousSubset subset() {
    return subset;
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
    for (String field : rawConfig.keySet()) {
      if (!FIELDS.contains(field)) {
        return ConfigOrError.fromError(
            Status.UNAVAILABLE.withDescription(
                String.format(
                    "%s.%s: unknown field (expected: %s)",
                    policyName,
                    field,
                    FIELDS.isEmpty() ? "no fields, {}" : "one of " + FIELDS)));
      }
    }
    if (rawConfig.containsKey(SubsetOption.SIZE) || rawConfig.containsKey(SubsetOption.CLIENT_ID)) {
      return SubsetOption.parse(policyName, rawConfig, WeightedPolicyConfig::new);
    }
    return ConfigOrError.fromConfig(DEFAULT);
  }

  @Override
  public String toString() {
    return subset == null ? "WeightedPolicyConfig{}" : "WeightedPolicyConfig{" + subset + "}";
  }
}
