/**
 * Weighted load balancing for grpc-java.
 *
 * <p>The policies' providers, {@link io.steelyard.balancer.WeightedRandomLoadBalancerProvider}
 * ({@code weighted_random}), {@link
 * io.steelyard.balancer.WeightedRoundRobinStaticLoadBalancerProvider} ({@code
 * weighted_round_robin_static}) and {@link
 * io.steelyard.balancer.WeightedLeastRequestLoadBalancerProvider} ({@code
 * weighted_least_request}), all registered through {@code META-INF/services}; {@link
 * io.steelyard.balancer.WeightedPolicyProvider}, their base, for writing a policy of your own
 * (with the types in {@code io.steelyard.balancer.spi}); and {@link
 * io.steelyard.balancer.BalancerMetrics}. A resolver attaches weights with {@code
 * io.steelyard.registry.EndpointWeights} (module {@code registry-core}).
 *
 * <p>Layers, each using only those below it: this package, then {@code
 * io.steelyard.balancer.internal} (the shared balancer and the pickers; may change without
 * notice), then {@code io.steelyard.balancer.spi}. See {@code docs/balancer.md}.
 */
package io.steelyard.balancer;
