package io.steelyard.balancer.spi;

import io.grpc.EquivalentAddressGroup;

/**
 * A {@link PickerFactory} whose pickers weigh each endpoint's live load, as {@code
 * weighted_least_request}'s do, and which also takes load reports that arrive outside calls (an
 * out-of-band ORCA stream, say). Get {@code weighted_least_request}'s from {@code
 * WeightedLeastRequestLoadBalancerProvider.newPickerFactory(decorator)}.
 *
 * <pre>{@code
 * LoadAwarePickerFactory pickers = WeightedLeastRequestLoadBalancerProvider.newPickerFactory(
 *     TracerDecorator.NONE);
 * // on an out-of-band report for the endpoint at eag, in the SynchronizationContext:
 * pickers.reportUtilization(eag, 0.7);
 * }</pre>
 *
 * <p>Threading: as {@link PickerFactory}; {@link #reportUtilization} runs in the balancer's
 * SynchronizationContext.
 */
public interface LoadAwarePickerFactory extends PickerFactory {

  /**
   * Hands {@code utilization} to the READY endpoint whose addresses are {@code eag}'s (attributes
   * ignored); returns false, doing nothing, when no endpoint matches.
   */
  boolean reportUtilization(EquivalentAddressGroup eag, double utilization);
}
