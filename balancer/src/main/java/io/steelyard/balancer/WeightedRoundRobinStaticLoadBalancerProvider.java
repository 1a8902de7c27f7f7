package io.steelyard.balancer;

import io.steelyard.balancer.internal.WeightedPolicy;

/**
 * The {@value #POLICY_NAME} load-balancing policy: calls go to the READY endpoints in a fixed,
 * smooth, interleaved order in which each endpoint appears in proportion to its weight ({@link
 * EndpointWeights}); weights 1, 2, 5 give {@code c b c a c c b c} and repeat.
 *
 * <p>Registered through {@code META-INF/services}; select it with
 *
 * <pre>{@code
 * ManagedChannelBuilder.forTarget("etcd:///greeter")
 *     .defaultLoadBalancingPolicy(WeightedRoundRobinStaticLoadBalancerProvider.POLICY_NAME)
 * }</pre>
 *
 * <p>or a service config {@code {"loadBalancingConfig": [{"weighted_round_robin_static": {}}]}}
 * (options: {@code panicThresholdPercent}, {@code slowStart}, {@code subsetSize}, {@code
 * subsetClientId}; an unknown field is a config error). Picks are O(1): each
 * thread advances a counter of its own stripe through a schedule built once per picker; no lock,
 * no allocation, no write shared between threads, so throughput scales with threads. See {@code
 * docs/balancer.md} for the full contract and its smoothness bounds.
 */
public final class WeightedRoundRobinStaticLoadBalancerProvider extends WeightedPolicyProvider {

  /** The policy name in service configs and {@code defaultLoadBalancingPolicy}. */
  public static final String POLICY_NAME = "weighted_round_robin_static";

  /** Called by {@link java.util.ServiceLoader} (grpc's {@code LoadBalancerRegistry}). */
  public WeightedRoundRobinStaticLoadBalancerProvider() {
    super(WeightedPolicy.WEIGHTED_ROUND_ROBIN_STATIC);
  }
}
