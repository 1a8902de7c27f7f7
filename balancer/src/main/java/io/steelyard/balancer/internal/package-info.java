/**
 * Implementation of steelyard's load-balancing policies.
 *
 * <p>Public here only because the providers in {@code io.steelyard.balancer} and the benchmarks
 * call it: {@link io.steelyard.balancer.internal.WeightedPolicy} (one per policy: name, config
 * parser, balancer and picker factory), {@link io.steelyard.balancer.internal.PickerFactory},
 * {@link io.steelyard.balancer.internal.WeightedPolicyConfig}, and what {@code balancer-orca}
 * builds on: {@link io.steelyard.balancer.internal.LeastRequestPickerFactory}, {@link
 * io.steelyard.balancer.internal.EndpointLoad} and {@link
 * io.steelyard.balancer.internal.TracerDecorator}. Everything else is package-private:
 * the shared {@code MultiChildLoadBalancer} subclass ({@code WeightedLoadBalancer}), the one place
 * that decides eligibility and effective weights ({@code EffectiveWeights}), the immutable pickers,
 * and the health-checking glue.
 *
 * <p><b>No compatibility promise:</b> everything in this package may change or disappear in any
 * release. Use {@link io.steelyard.balancer.WeightedRandomLoadBalancerProvider}, {@link
 * io.steelyard.balancer.WeightedRoundRobinStaticLoadBalancerProvider} and {@link
 * io.steelyard.registry.EndpointWeights} instead.
 */
@javax.annotation.ParametersAreNonnullByDefault
package io.steelyard.balancer.internal;
