package io.steelyard.balancer;

import com.google.common.collect.ImmutableSet;
import io.steelyard.balancer.internal.WeightedBalancers;
import io.steelyard.balancer.spi.PickerFactory;

/**
 * The {@value #POLICY_NAME} load-balancing policy: calls go to the READY endpoints in a fixed,
 * smooth, interleaved order in which each endpoint appears in proportion to its weight ({@code
 * io.steelyard.registry.EndpointWeights}); weights 1, 2, 5 give {@code c b c a c c b c} and repeat.
 *
 * <p>Registered through {@code META-INF/services}. Select it for every {@code etcd:} channel of a
 * service with the service config stored in the registry ({@code steelyard config set}, see
 * docs/balancer.md), or on one channel, which then keeps its own choice over the registry's:
 *
 * <pre>{@code
 * ManagedChannelBuilder.forTarget("etcd:///greeter")
 *     .disableServiceConfigLookUp()
 *     .defaultLoadBalancingPolicy(WeightedRoundRobinStaticLoadBalancerProvider.POLICY_NAME)
 * }</pre>
 *
 * <p>or a service config, every field optional:
 *
 * <pre>{@code
 * {"loadBalancingConfig": [{"weighted_round_robin_static": {
 *     "slowStart": {"window": "30s"}, "panicThresholdPercent": 50, "subsetSize": 20}}]}
 * }</pre>
 *
 * <p>The options are those every weighted policy shares ({@link
 * io.steelyard.balancer.spi.WeightedPolicyConfig}): slow start, the panic threshold and
 * deterministic subsetting ({@code subsetSize}, {@code subsetClientId}). An unknown field is
 * ignored with a logged warning; a known field with a bad value is a config error naming it. Picks
 * are O(1): each thread advances a counter of its own stripe through a schedule built once per
 * picker; no lock, no allocation, no write shared between threads, so throughput scales with
 * threads. See {@code docs/balancer.md} for the full contract and its smoothness bounds.
 */
public final class WeightedRoundRobinStaticLoadBalancerProvider extends WeightedPolicyProvider {

  /** The policy name in service configs and {@code defaultLoadBalancingPolicy}. */
  public static final String POLICY_NAME = "weighted_round_robin_static";

  /** Called by {@link java.util.ServiceLoader} (grpc's {@code LoadBalancerRegistry}). */
  public WeightedRoundRobinStaticLoadBalancerProvider() {
    super(POLICY_NAME, ImmutableSet.of());
  }

  @Override
  protected PickerFactory newPickerFactory() {
    return WeightedBalancers.smoothRoundRobinPickers();
  }
}
