package io.steelyard.balancer.internal;

import io.grpc.LoadBalancer.SubchannelPicker;

/**
 * How one policy turns the READY, eligible endpoints into a picker: the only part in which the
 * weighted policies differ.
 *
 * <p>A balancer gets its own factory ({@link WeightedPolicy#newPickerFactory()}) and keeps it for
 * its lifetime, so a factory may hold state that must outlive a single picker: round robin's
 * positions, so that a picker swap does not restart the sequence (and, later, a least-request
 * policy's per-endpoint outstanding-call counters).
 *
 * <p>Threading: {@link #newPicker} is called from the balancer's SynchronizationContext; the
 * pickers it returns are immutable, thread-safe, lock-free and allocation-free on the pick path,
 * and implement {@code equals} so the balancer publishes a picker only when it changed.
 */
public interface PickerFactory {

  /**
   * A picker over {@code childPickers}, the READY children's own pickers, with their effective
   * {@code weights} (parallel, all positive, at least one). Neither array is kept: the picker
   * copies what it needs.
   */
  SubchannelPicker newPicker(SubchannelPicker[] childPickers, int[] weights);
}
