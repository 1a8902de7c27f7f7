/**
 * Weighted load balancing for grpc-java.
 *
 * <p>The public surface is small: {@link io.steelyard.registry.EndpointWeights} (how a resolver
 * attaches a weight to an address) and the policies' providers, {@link
 * io.steelyard.balancer.WeightedRandomLoadBalancerProvider} ({@code weighted_random}), {@link
 * io.steelyard.balancer.WeightedRoundRobinStaticLoadBalancerProvider} ({@code
 * weighted_round_robin_static}) and {@link
 * io.steelyard.balancer.WeightedLeastRequestLoadBalancerProvider} ({@code
 * weighted_least_request}), all registered through {@code META-INF/services}. Everything in
 * {@code io.steelyard.balancer.internal} may change without notice. See {@code docs/balancer.md}.
 */
package io.steelyard.balancer;
