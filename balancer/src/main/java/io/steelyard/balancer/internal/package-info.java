/**
 * Implementation of steelyard's load-balancing policies.
 *
 * <p>Public here only because the providers in {@code io.steelyard.balancer} and the benchmarks
 * call it: {@link io.steelyard.balancer.internal.WeightedBalancers} (the shared balancer, the
 * health-checking wrapper, the built-in picker factories) and {@link
 * io.steelyard.balancer.internal.PolicyConfigParser}. Everything else is package-private: the shared
 * {@code MultiChildLoadBalancer} subclass ({@code WeightedLoadBalancer}), the steps between its
 * endpoints and a picker (slow start's ramps, the panic threshold, metadata selection, the zone
 * step), the immutable pickers, and the health-checking glue. The rules integrations share,
 * eligibility and slow-start weights, are public in {@code io.steelyard.balancer.spi}. Nothing here knows a policy's name: each provider passes its own.
 *
 * <p><b>No compatibility promise:</b> everything in this package may change or disappear in any
 * release. Build on {@link io.steelyard.balancer.WeightedPolicyProvider} and {@code
 * io.steelyard.balancer.spi} instead.
 */
@javax.annotation.ParametersAreNonnullByDefault
package io.steelyard.balancer.internal;
