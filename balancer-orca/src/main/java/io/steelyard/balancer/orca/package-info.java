/**
 * {@code weighted_least_request_orca}: steelyard's {@code weighted_least_request} with
 * server-reported utilization (ORCA), per call and out of band. A separate module because ORCA's
 * client utilities live in grpc-xds, which the base {@code balancer} jar does not carry. The
 * public surface is {@link io.steelyard.balancer.orca.WeightedLeastRequestOrcaLoadBalancerProvider},
 * registered through {@code META-INF/services}. See {@code docs/balancer.md}.
 */
package io.steelyard.balancer.orca;
