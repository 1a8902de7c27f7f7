package io.steelyard.balancer;

import io.grpc.LoadBalancer;
import io.grpc.LoadBalancerProvider;
import io.grpc.NameResolver.ConfigOrError;
import io.steelyard.balancer.internal.HealthChecking;
import io.steelyard.balancer.internal.WeightedLoadBalancer.Policy;
import java.util.Map;

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
 * <p>or a service config {@code {"loadBalancingConfig": [{"weighted_round_robin_static": {}}]}}. Picks are
 * O(1): one shared atomic counter indexes a schedule built once per picker; no lock, no
 * allocation. See
 * {@code docs/balancer.md} for the full contract.
 */
public final class WeightedRoundRobinStaticLoadBalancerProvider extends LoadBalancerProvider {

  /** The policy name in service configs and {@code defaultLoadBalancingPolicy}. */
  public static final String POLICY_NAME = "weighted_round_robin_static";

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
        Policy.WEIGHTED_ROUND_ROBIN_STATIC, helper);
  }

  @Override
  public ConfigOrError parseLoadBalancingPolicyConfig(Map<String, ?> rawConfig) {
    return ConfigOrError.fromConfig(POLICY_NAME);
  }
}
