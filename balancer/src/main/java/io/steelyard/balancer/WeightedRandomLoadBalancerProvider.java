package io.steelyard.balancer;

import com.google.common.collect.ImmutableSet;
import io.steelyard.balancer.internal.WeightedBalancers;
import io.steelyard.balancer.spi.PickerFactory;

/**
 * The {@value #POLICY_NAME} load-balancing policy: each call goes to a READY endpoint chosen at
 * random with probability proportional to its weight ({@code io.steelyard.registry.EndpointWeights}).
 *
 * <p>Registered through {@code META-INF/services}. Select it for every {@code etcd:} channel of a
 * service with the service config stored in the registry ({@code steelyard config set}, see
 * docs/balancer.md), or on one channel, which then keeps its own choice over the registry's:
 *
 * <pre>{@code
 * ManagedChannelBuilder.forTarget("etcd:///greeter")
 *     .disableServiceConfigLookUp()
 *     .defaultLoadBalancingPolicy(WeightedRandomLoadBalancerProvider.POLICY_NAME)
 * }</pre>
 *
 * <p>or a service config, every field optional:
 *
 * <pre>{@code
 * {"loadBalancingConfig": [{"weighted_random": {
 *     "slowStart": {"window": "30s"}, "panicThresholdPercent": 50, "subsetSize": 20}}]}
 * }</pre>
 *
 * <p>The options are those every weighted policy shares ({@link
 * io.steelyard.balancer.spi.WeightedPolicyConfig}): slow start, the panic threshold and
 * deterministic subsetting ({@code subsetSize}, {@code subsetClientId}). An unknown field is
 * ignored with a logged warning; a known field with a bad value is a config error naming it. Picks
 * are O(1) (alias table built once per picker), lock-free and allocation-free. See {@code
 * docs/balancer.md} for the full contract.
 */
public final class WeightedRandomLoadBalancerProvider extends WeightedPolicyProvider {

  /** The policy name in service configs and {@code defaultLoadBalancingPolicy}. */
  public static final String POLICY_NAME = "weighted_random";

  /** Called by {@link java.util.ServiceLoader} (grpc's {@code LoadBalancerRegistry}). */
  public WeightedRandomLoadBalancerProvider() {
    super(POLICY_NAME, ImmutableSet.of());
  }

  @Override
  protected PickerFactory newPickerFactory() {
    return WeightedBalancers.weightedRandomPickers();
  }
}
