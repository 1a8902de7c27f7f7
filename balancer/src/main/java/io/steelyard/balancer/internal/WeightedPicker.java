package io.steelyard.balancer.internal;

import static com.google.common.base.Preconditions.checkArgument;

import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.PickSubchannelArgs;
import io.grpc.LoadBalancer.SubchannelPicker;
import java.util.Arrays;
import javax.annotation.Nullable;

/**
 * Common part of the weighted pickers: the endpoints' child pickers, their weights, and a
 * precomputed {@link PickResult} per endpoint.
 *
 * <p>Immutable and thread-safe. Two pickers are equal when they are of the same kind and hold the
 * same child pickers (by value) with the same weights in the same order, so the balancer can skip
 * publishing a picker that would behave exactly like the current one.
 */
abstract class WeightedPicker extends SubchannelPicker {

  /** The READY children's pickers, one per endpoint; never empty. */
  final SubchannelPicker[] childPickers;

  /** Positive weights, parallel to {@link #childPickers}. */
  final int[] weights;

  /** Precomputed result per endpoint, or null where the child picker is called per pick. */
  private final PickResult[] results;

  private final int hashCode;

  WeightedPicker(SubchannelPicker[] childPickers, int[] weights) {
    checkArgument(childPickers.length > 0, "childPickers: empty (expected: at least one)");
    checkArgument(
        childPickers.length == weights.length,
        "weights: %s entries (expected: %s, one per child picker)",
        weights.length,
        childPickers.length);
    for (int w : weights) {
      checkArgument(w > 0, "weight: %s (expected: > 0)", w);
    }
    this.childPickers = childPickers.clone();
    this.weights = weights.clone();
    this.results = new PickResult[childPickers.length];
    for (int i = 0; i < childPickers.length; i++) {
      results[i] = PickerSlot.precompute(childPickers[i]);
    }
    // Deliberately leaves the children out: their value hashCode (PickResult's) boxes and hashes
    // several fields per endpoint, which was a quarter of the build time at n = 10,000. equals
    // still compares children by value, so this stays consistent with it.
    this.hashCode = 31 * getClass().hashCode() + Arrays.hashCode(this.weights);
  }

  /** The result for endpoint {@code index}: the stored one, or a call into the child. */
  final PickResult resultFor(int index, PickSubchannelArgs args) {
    PickResult result = results[index];
    return result != null ? result : childPickers[index].pickSubchannel(args);
  }

  /** The stored result for endpoint {@code index}, or null where the child is called per pick. */
  @Nullable
  final PickResult precomputed(int index) {
    return results[index];
  }

  final int size() {
    return childPickers.length;
  }

  @Override
  public boolean equals(Object o) {
    if (this == o) {
      return true;
    }
    if (o == null || o.getClass() != getClass()) {
      return false;
    }
    WeightedPicker that = (WeightedPicker) o;
    return hashCode == that.hashCode
        && Arrays.equals(weights, that.weights)
        && Arrays.equals(childPickers, that.childPickers);
  }

  @Override
  public int hashCode() {
    return hashCode;
  }

  @Override
  public String toString() {
    return getClass().getSimpleName()
        + "{endpoints="
        + childPickers.length
        + ", weights="
        + (weights.length <= 16 ? Arrays.toString(weights) : weights.length + " weights")
        + "}";
  }
}
