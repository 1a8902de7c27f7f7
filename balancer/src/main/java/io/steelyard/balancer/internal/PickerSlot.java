package io.steelyard.balancer.internal;

import io.grpc.CallOptions;
import io.grpc.LoadBalancer.FixedResultPicker;
import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.PickSubchannelArgs;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import javax.annotation.Nullable;

/**
 * Turns the picker of a READY child into a precomputed {@link PickResult}, so the weighted pickers
 * return a stored object instead of calling into the child on every pick.
 *
 * <p>A READY pick_first child publishes a {@link FixedResultPicker}: it is immutable, so asking it
 * once at picker-build time yields the result it would return on every call. Any other picker type
 * (not produced by grpc-java's pick_first today) is not trusted to be constant and is delegated to
 * on each pick instead.
 */
final class PickerSlot {

  private static final PickSubchannelArgs PROBE_ARGS = new ProbeArgs();

  private PickerSlot() {}

  /** The precomputed result for {@code childPicker}, or null when it must be called per pick. */
  @Nullable
  static PickResult precompute(SubchannelPicker childPicker) {
    if (!(childPicker instanceof FixedResultPicker)) {
      return null;
    }
    PickResult result = childPicker.pickSubchannel(PROBE_ARGS);
    if (result.getSubchannel() == null || !result.getStatus().isOk() || result.isDrop()) {
      return null;
    }
    return result;
  }

  /** Arguments for the one build-time probe; a {@link FixedResultPicker} ignores them. */
  private static final class ProbeArgs extends PickSubchannelArgs {
    private static final MethodDescriptor.Marshaller<Void> VOID =
        new MethodDescriptor.Marshaller<Void>() {
          @Override
          public InputStream stream(Void value) {
            return new ByteArrayInputStream(new byte[0]);
          }

          @Override
          public Void parse(InputStream stream) {
            return null;
          }
        };
    private static final MethodDescriptor<Void, Void> METHOD =
        MethodDescriptor.<Void, Void>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName("steelyard.internal/PickerProbe")
            .setRequestMarshaller(VOID)
            .setResponseMarshaller(VOID)
            .build();
    private static final Metadata HEADERS = new Metadata();

    @Override
    public CallOptions getCallOptions() {
      return CallOptions.DEFAULT;
    }

    @Override
    public Metadata getHeaders() {
      return HEADERS;
    }

    @Override
    public MethodDescriptor<?, ?> getMethodDescriptor() {
      return METHOD;
    }
  }
}
