package io.steelyard.balancer.internal;

import io.grpc.CallOptions;
import io.grpc.LoadBalancer.FixedResultPicker;
import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.PickSubchannelArgs;
import io.grpc.LoadBalancer.Subchannel;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.lang.reflect.Method;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns the picker of a READY child into a precomputed {@link PickResult}, so the weighted pickers
 * return a stored object instead of calling into the child on every pick.
 *
 * <p>A READY pick_first child publishes a {@link FixedResultPicker}: it is immutable, so asking it
 * once at picker-build time yields the result it would return on every call. Any other picker type
 * (not produced by grpc-java's pick_first today) is not trusted to be constant and is delegated to
 * on each pick instead.
 *
 * <p>grpc-services' health-checking wrapper hands the balancer subchannels of its own class and
 * wraps every published picker in one that, on <em>each</em> pick, copies the result with the
 * unwrapped subchannel: one allocation per call, for {@code round_robin} as for us. We do that
 * unwrapping once, here, so the wrapper finds nothing to copy and returns our stored result. If
 * the wrapper's internals ever change (class or method gone), this step is skipped and the
 * wrapper's per-pick copy applies again: slower, never wrong, and caught by {@code
 * HealthWrapperUnwrappingTest}, which fails the day that happens.
 */
final class PickerSlot {

  private static final Logger logger = LoggerFactory.getLogger(PickerSlot.class);

  private static final PickSubchannelArgs PROBE_ARGS = new ProbeArgs();

  static final String HEALTH_SUBCHANNEL_CLASS =
      "io.grpc.protobuf.services.HealthCheckingLoadBalancerFactory$SubchannelImpl";

  @Nullable private static final Class<?> healthSubchannelClass;
  @Nullable private static final Method forwardingDelegate;

  static {
    Class<?> type = null;
    Method delegate = null;
    try {
      type = Class.forName(HEALTH_SUBCHANNEL_CLASS, false, PickerSlot.class.getClassLoader());
      delegate = io.grpc.util.ForwardingSubchannel.class.getDeclaredMethod("delegate");
      delegate.setAccessible(true);
      if (!io.grpc.util.ForwardingSubchannel.class.isAssignableFrom(type)) {
        type = null;
      }
    } catch (ClassNotFoundException e) {
      type = null; // no grpc-services: nothing to unwrap
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      logger.debug("cannot unwrap health-checking subchannels; picks will be copied per call", e);
      type = null;
    }
    healthSubchannelClass = type;
    forwardingDelegate = type == null ? null : delegate;
  }

  private PickerSlot() {}

  /** Whether the health-checking wrapper's subchannels were found and can be unwrapped. */
  static boolean unwrapsHealthCheckingSubchannels() {
    return healthSubchannelClass != null;
  }

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
    return unwrapHealthSubchannel(result);
  }

  /**
   * The error a failing child's picker reports (pick_first publishes a {@link FixedResultPicker}
   * with it while TRANSIENT_FAILURE); null when it reports none. Called outside the pick path.
   */
  @Nullable
  static io.grpc.Status failure(SubchannelPicker childPicker) {
    try {
      PickResult result = childPicker.pickSubchannel(PROBE_ARGS);
      return result.getStatus().isOk() ? null : result.getStatus();
    } catch (RuntimeException e) {
      logger.debug("cannot ask picker {} for its error", childPicker, e);
      return null;
    }
  }

  private static PickResult unwrapHealthSubchannel(PickResult result) {
    if (healthSubchannelClass == null || result.getSubchannel().getClass() != healthSubchannelClass) {
      return result;
    }
    try {
      return result.copyWithSubchannel((Subchannel) forwardingDelegate.invoke(result.getSubchannel()));
    } catch (ReflectiveOperationException | RuntimeException e) {
      logger.debug("cannot unwrap health-checking subchannel {}", result.getSubchannel(), e);
      return result;
    }
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
