package io.steelyard.balancer.spi;

import io.grpc.LoadBalancer.SubchannelPicker;
import javax.annotation.Nullable;

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
   * One picker per group of one update's READY endpoints ({@code endpointKeys[g]}, {@code
   * childPickers[g]}, {@code weights[g]}, each group as in {@link #newPicker(Object[],
   * SubchannelPicker[], int[], WeightedPolicyConfig)}), built together: what the steps before the
   * pick use when they divide the endpoints (a split's metadata selections, each selection's zones) and
   * pick within a group. Groups may share endpoints (selections may overlap). The balancer makes one
   * call per update covering every group. A group's index is not a stable identity: groups come
   * and go between updates (a zone without spare capacity gets no group), so an index may name
   * another group after a rebuild. A factory that keeps state per endpoint ({@code
   * weighted_least_request}'s load) keeps one state per endpoint, shared by every group holding
   * it, for every endpoint of every group (one call per group would not let it tell); one that
   * keeps state per picker sequence (round robin's positions) may keep it per group index: a
   * position may then move to another group after a rebuild, and each picker's proportions stay
   * exact over a whole cycle of its own schedule. The default calls {@link #newPicker(Object[],
   * SubchannelPicker[], int[], WeightedPolicyConfig)} per group.
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

  /**
   * This factory as a {@link LoadAwarePickerFactory} when its pickers weigh each endpoint's live
   * load, else null (the default). A capability, asked for by the zone step's live-load spill so
   * that no step needs to know a policy's class: a factory that returns itself here builds
   * pickers that are {@link LoadAwarePicker}s.
   */
  @Nullable
  default LoadAwarePickerFactory loadAware() {
    return null;
  }
}
