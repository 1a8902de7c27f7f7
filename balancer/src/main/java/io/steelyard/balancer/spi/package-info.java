/**
 * What a weighted policy is built from, for writing one with {@link
 * io.steelyard.balancer.WeightedPolicyProvider}: the {@link
 * io.steelyard.balancer.spi.PickerFactory} that makes a policy different from the others, the
 * parsed config every policy shares ({@link io.steelyard.balancer.spi.WeightedPolicyConfig}, with
 * {@link io.steelyard.balancer.spi.SlowStartConfig}, {@link
 * io.steelyard.balancer.spi.ClientSubset} and {@link
 * io.steelyard.balancer.spi.EndpointSelection}), and the hooks a {@code weighted_least_request}
 * variant uses to feed server-reported load into the score ({@link
 * io.steelyard.balancer.spi.TracerDecorator}, {@link
 * io.steelyard.balancer.spi.LoadAwarePickerFactory}); and the observation hook behind {@code
 * io.steelyard.balancer.BalancerMetrics}, {@link io.steelyard.balancer.spi.BalancerObserver},
 * which is told each balancer's {@link io.steelyard.balancer.spi.EndpointState}s.
 *
 * <p>It also holds the rules that integrations picking outside gRPC call rather than copy: the
 * eligibility rule ({@link io.steelyard.balancer.spi.EffectiveWeights}: drain, and every endpoint
 * drained) and the slow-start weight function ({@link
 * io.steelyard.balancer.spi.SlowStartWeights}); the zone formula they share is registry-core's
 * {@code io.steelyard.registry.ZoneShares}.
 *
 * <p>Public API with the same promise as {@code io.steelyard.balancer}; this package depends on
 * nothing else of steelyard's but registry-core's weight contract ({@code
 * io.steelyard.registry.EndpointWeights}), and {@code io.steelyard.balancer.internal} builds on
 * it.
 */
@javax.annotation.ParametersAreNonnullByDefault
package io.steelyard.balancer.spi;
