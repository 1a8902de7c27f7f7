package io.steelyard.balancer.internal;

import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.PickSubchannelArgs;
import io.grpc.LoadBalancer.SubchannelPicker;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The balancer's TRANSIENT_FAILURE picker: rotates over the failed children so each one's error
 * surfaces. Thread-safe; equal to another over the same pickers.
 */
final class FailingPicker extends SubchannelPicker {
  private final SubchannelPicker[] pickers;
  private final AtomicInteger next = new AtomicInteger();

  FailingPicker(List<SubchannelPicker> pickers) {
    this.pickers = pickers.toArray(new SubchannelPicker[0]);
  }

  @Override
  public PickResult pickSubchannel(PickSubchannelArgs args) {
    return pickers[Math.floorMod(next.getAndIncrement(), pickers.length)].pickSubchannel(args);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof FailingPicker && Arrays.equals(pickers, ((FailingPicker) o).pickers);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(pickers);
  }

  @Override
  public String toString() {
    return "FailingPicker{" + Arrays.toString(pickers) + "}";
  }
}
