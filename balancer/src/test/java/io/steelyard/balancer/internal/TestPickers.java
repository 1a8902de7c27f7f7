package io.steelyard.balancer.internal;

import io.grpc.Attributes;
import io.grpc.LoadBalancer.FixedResultPicker;
import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.Subchannel;
import io.grpc.LoadBalancer.SubchannelPicker;

/** Child pickers whose subchannel knows its endpoint index, for picker-level tests. */
final class TestPickers {

  private TestPickers() {}

  static SubchannelPicker[] childPickers(int n) {
    SubchannelPicker[] pickers = new SubchannelPicker[n];
    for (int i = 0; i < n; i++) {
      pickers[i] = new FixedResultPicker(PickResult.withSubchannel(new IndexedSubchannel(i)));
    }
    return pickers;
  }

  static int indexOf(PickResult result) {
    return ((IndexedSubchannel) result.getSubchannel()).index;
  }

  static final class IndexedSubchannel extends Subchannel {
    final int index;

    IndexedSubchannel(int index) {
      this.index = index;
    }

    @Override
    public void shutdown() {}

    @Override
    public void requestConnection() {}

    @Override
    public Attributes getAttributes() {
      return Attributes.EMPTY;
    }

    @Override
    public String toString() {
      return "endpoint-" + index;
    }
  }
}
