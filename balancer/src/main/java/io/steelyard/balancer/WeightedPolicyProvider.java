package io.steelyard.balancer;

import static java.util.Objects.requireNonNull;

import io.grpc.LoadBalancer;
import io.grpc.LoadBalancerProvider;
import io.grpc.NameResolver.ConfigOrError;
import io.steelyard.balancer.internal.WeightedPolicy;
import java.util.Map;

/**
 * What every steelyard policy provider shares: always available, the same priority, and the hop
 * into the policy's implementation. A provider never throws: a bad config is a {@link
 * ConfigOrError}.
 */
abstract class WeightedPolicyProvider extends LoadBalancerProvider {

  /**
   * grpc-java's own providers use 5. Priority only matters between providers of the same name,
   * and ours collide with none.
   */
  private static final int PRIORITY = 5;

  private final WeightedPolicy policy;

  WeightedPolicyProvider(WeightedPolicy policy) {
    this.policy = requireNonNull(policy, "policy");
  }

  @Override
  public final boolean isAvailable() {
    return true;
  }

  @Override
  public final int getPriority() {
    return PRIORITY;
  }

  @Override
  public final String getPolicyName() {
    return policy.name();
  }

  @Override
  public final LoadBalancer newLoadBalancer(LoadBalancer.Helper helper) {
    return policy.newLoadBalancer(helper);
  }

  @Override
  public final ConfigOrError parseLoadBalancingPolicyConfig(Map<String, ?> rawConfig) {
    return policy.parseConfig(rawConfig);
  }
}
