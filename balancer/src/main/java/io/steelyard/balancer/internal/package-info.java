/**
 * Implementation of steelyard's load-balancing policies: the shared {@code MultiChildLoadBalancer}
 * subclass and the immutable pickers.
 *
 * <p><b>No compatibility promise:</b> everything in this package may change or disappear in any
 * release. Use {@link io.steelyard.balancer.WeightedRandomLoadBalancerProvider}, {@link
 * io.steelyard.balancer.WeightedRoundRobinStaticLoadBalancerProvider} and {@link
 * io.steelyard.balancer.EndpointWeights} instead.
 */
@javax.annotation.ParametersAreNonnullByDefault
package io.steelyard.balancer.internal;
