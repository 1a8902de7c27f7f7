package io.steelyard.balancer.spi;

import io.grpc.LoadBalancer.SubchannelPicker;

/**
 * How one policy turns the READY, eligible endpoints into a picker: the only part in which the
 * weighted policies differ.
 *
 * <p>A balancer gets its own factory (from {@code WeightedPolicyProvider.newPickerFactory()}) and
 * keeps it for its lifetime, so a factory may hold state that must outlive a single picker: round robin's
 * positions, so that a picker swap does not restart the sequence, and {@code
 * weighted_least_request}'s per-endpoint load (outstanding calls, latency, errors), which must
 * follow an endpoint from picker to picker.
 *
 * <p>Threading: {@link #newPicker} is called from the balancer's SynchronizationContext; the
 * pickers it returns are immutable, thread-safe, lock-free and allocation-free on the pick path,
 * and implement {@code equals} so the balancer publishes a picker only when it changed.
 */
@FunctionalInterface
public interface PickerFactory {

  /**
   * A picker over {@code childPickers}, the READY children's own pickers, with their effective
   * {@code weights} (parallel, all positive, at least one). Neither array is kept: the picker
   * copies what it needs.
   */
  SubchannelPicker newPicker(SubchannelPicker[] childPickers, int[] weights);

  /**
   * As {@link #newPicker(SubchannelPicker[], int[])}, also given each endpoint's stable identity
   * ({@code endpointKeys}, parallel: the balancer's child key, equal across resolutions for the
   * same addresses) and the policy's parsed config. The balancer calls this one; a factory whose
   * pickers need neither keeps the default, which ignores both.
   */
  default SubchannelPicker newPicker(
      Object[] endpointKeys,
      SubchannelPicker[] childPickers,
      int[] weights,
      WeightedPolicyConfig config) {
    return newPicker(childPickers, weights);
  }

  /**
   * Pickers over several groups of one update's READY endpoints, one per group, each as by
   * {@link #newPicker(Object[], SubchannelPicker[], int[], WeightedPolicyConfig)}: the balancer
   * calls this when the config splits calls across metadata subsets ({@link EndpointSubsets}).
   * Groups may share endpoints. A factory that keeps per-endpoint state from picker to picker
   * overrides this so that what it keeps covers every group, not the last one only; the default
   * calls {@code newPicker} once per group.
   */
  default SubchannelPicker[] newPickers(
      Object[][] endpointKeys,
      SubchannelPicker[][] childPickers,
      int[][] weights,
      WeightedPolicyConfig config) {
    SubchannelPicker[] pickers = new SubchannelPicker[endpointKeys.length];
    for (int g = 0; g < pickers.length; g++) {
      pickers[g] = newPicker(endpointKeys[g], childPickers[g], weights[g], config);
    }
    return pickers;
  }
}
