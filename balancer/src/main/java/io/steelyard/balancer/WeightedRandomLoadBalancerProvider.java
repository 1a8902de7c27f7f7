package io.steelyard.balancer;

import io.steelyard.balancer.internal.WeightedPolicy;

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
 * <p>or a service config {@code {"loadBalancingConfig": [{"weighted_random": {}}]}} (options:
 * {@code panicThresholdPercent}, {@code slowStart}, {@code subsetSize}, {@code subsetClientId};
 * an unknown field is a config error). Picks are O(1) (alias table built
 * once per picker), lock-free and allocation-free. See {@code docs/balancer.md} for the full
 * contract.
 */
public final class WeightedRandomLoadBalancerProvider extends WeightedPolicyProvider {

  /** The policy name in service configs and {@code defaultLoadBalancingPolicy}. */
  public static final String POLICY_NAME = "weighted_random";

  /** Called by {@link java.util.ServiceLoader} (grpc's {@code LoadBalancerRegistry}). */
  public WeightedRandomLoadBalancerProvider() {
    super(WeightedPolicy.WEIGHTED_RANDOM);
  }
}
