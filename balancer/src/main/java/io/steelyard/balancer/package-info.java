/**
 * Weighted load balancing for grpc-java.
 *
 * <p>The public surface is small: {@link io.steelyard.balancer.EndpointWeights} (how a resolver
 * attaches a weight to an address) and the two policies' providers, {@link
 * io.steelyard.balancer.WeightedRandomLoadBalancerProvider} ({@code weighted_random}) and {@link
 * io.steelyard.balancer.WeightedRoundRobinStaticLoadBalancerProvider} ({@code
 * weighted_round_robin_static}), both registered through {@code META-INF/services}. Everything in
 * {@code io.steelyard.balancer.internal} may change without notice. See {@code docs/balancer.md}.
 */
package io.steelyard.balancer;
