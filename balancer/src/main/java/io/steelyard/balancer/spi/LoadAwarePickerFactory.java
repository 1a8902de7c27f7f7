package io.steelyard.balancer.spi;

import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer.SubchannelPicker;

/**
 * A {@link PickerFactory} whose pickers weigh each endpoint's live load, as {@code
 * weighted_least_request}'s do: its pickers are also {@link LoadAwarePicker}s, which the zone
 * step's live-load spill uses, and it takes load reports that arrive outside calls (an
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

  /**
   * As {@link #newPickers}, and each picker's {@link LoadAwarePicker} side in {@code views}
   * (parallel to the result, as long as {@code endpointKeys}): {@code views[g]} is the picker
   * returned at {@code g}, seen as a {@link LoadAwarePicker}. What the zone step calls when it
   * spills by live load, in place of {@link #newPickers}, with the same contract.
   */
  SubchannelPicker[] newLoadAwarePickers(
      Object[][] endpointKeys,
      SubchannelPicker[][] childPickers,
      int[][] weights,
      WeightedPolicyConfig config,
      LoadAwarePicker[] views);

  /** This factory: its pickers weigh live load. */
  @Override
  default LoadAwarePickerFactory loadAware() {
    return this;
  }
}
