package io.steelyard.balancer;

import io.grpc.LoadBalancer;
import io.grpc.LoadBalancerProvider;
import io.grpc.NameResolver.ConfigOrError;
import io.steelyard.balancer.internal.HealthChecking;
import io.steelyard.balancer.internal.WeightedLoadBalancer.Policy;
import java.util.Map;

/**
 * The {@value #POLICY_NAME} load-balancing policy: each call goes to a READY endpoint chosen at
 * random with probability proportional to its weight ({@link EndpointWeights}).
 *
 * <p>Registered through {@code META-INF/services}; select it with
 *
 * <pre>{@code
 * ManagedChannelBuilder.forTarget("etcd:///greeter")
 *     .defaultLoadBalancingPolicy(WeightedRandomLoadBalancerProvider.POLICY_NAME)
 * }</pre>
 *
 * <p>or a service config {@code {"loadBalancingConfig": [{"weighted_random": {}}]}}. Picks are
 * O(1) (alias table built once per picker), lock-free and allocation-free. See
 * {@code docs/balancer.md} for the full contract.
 */
public final class WeightedRandomLoadBalancerProvider extends LoadBalancerProvider {

  /** The policy name in service configs and {@code defaultLoadBalancingPolicy}. */
  public static final String POLICY_NAME = "weighted_random";

  @Override
  public boolean isAvailable() {
    return true;
  }

  @Override
  public int getPriority() {
    return 5;
  }

  @Override
  public String getPolicyName() {
    return POLICY_NAME;
  }

  @Override
  public LoadBalancer newLoadBalancer(LoadBalancer.Helper helper) {
    return HealthChecking.newLoadBalancer(
        Policy.WEIGHTED_RANDOM, helper);
  }

  @Override
  public ConfigOrError parseLoadBalancingPolicyConfig(Map<String, ?> rawConfig) {
    return ConfigOrError.fromConfig(POLICY_NAME);
  }
}
