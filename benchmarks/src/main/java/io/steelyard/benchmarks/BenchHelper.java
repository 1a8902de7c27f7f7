package io.steelyard.benchmarks;

import io.grpc.Attributes;
import io.grpc.ChannelLogger;
import io.grpc.ConnectivityState;
import io.grpc.ConnectivityStateInfo;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer;
import io.grpc.LoadBalancerProvider;
import io.grpc.ManagedChannel;
import io.grpc.NameResolver;
import io.grpc.SynchronizationContext;
import io.steelyard.balancer.EndpointWeights;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import javax.annotation.Nullable;

/**
 * Drives a real {@link LoadBalancerProvider} the way a channel would, with fake subchannels that
 * become READY on demand, and keeps the last picker it published. This is how every policy's
 * picker is obtained for the benchmarks, grpc-java's {@code round_robin} included.
 */
final class BenchHelper extends LoadBalancer.Helper {

  private static final ScheduledExecutorService TIMERS =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "bench-helper-timers");
            t.setDaemon(true);
            return t;
          });

  final SynchronizationContext syncContext =
      new SynchronizationContext(
          (thread, e) -> {
            throw new IllegalStateException("balancer failed in the SynchronizationContext", e);
          });
  final List<BenchSubchannel> subchannels = new ArrayList<>();
  volatile ConnectivityState state;
  volatile LoadBalancer.SubchannelPicker picker;
  final LoadBalancer balancer;
  @Nullable private final NameResolver.Args args;

  BenchHelper(LoadBalancerProvider provider) {
    this(provider, null);
  }

  /** With the channel's name-resolver arguments {@code args} (null: a helper without them). */
  BenchHelper(LoadBalancerProvider provider, @Nullable NameResolver.Args args) {
    this.args = args;
    this.balancer = provider.newLoadBalancer(this);
  }

  /** Name-resolver arguments holding {@code value} under {@code key}, as a channel builds them. */
  static <T> NameResolver.Args argsWith(NameResolver.Args.Key<T> key, T value) {
    return NameResolver.Args.newBuilder()
        .setDefaultPort(443)
        .setProxyDetector(addr -> null)
        .setSynchronizationContext(new SynchronizationContext((t, e) -> {
          throw new IllegalStateException(e);
        }))
        .setServiceConfigParser(new NameResolver.ServiceConfigParser() {
          @Override
          public NameResolver.ConfigOrError parseServiceConfig(Map<String, ?> raw) {
            return NameResolver.ConfigOrError.fromConfig(raw);
          }
        })
        .setArg(key, value)
        .build();
  }

  /** Endpoints 10.x.y.z:443 with {@code weights}, in order. */
  static List<EquivalentAddressGroup> endpoints(int[] weights) {
    List<EquivalentAddressGroup> eags = new ArrayList<>(weights.length);
    for (int i = 0; i < weights.length; i++) {
      InetSocketAddress address =
          InetSocketAddress.createUnresolved(
              "10." + (i >> 16 & 255) + "." + (i >> 8 & 255) + "." + (i & 255), 443);
      eags.add(EndpointWeights.withWeight(new EquivalentAddressGroup(address), weights[i]));
    }
    return eags;
  }

  void resolve(List<EquivalentAddressGroup> eags) {
    syncContext.execute(
        () ->
            balancer.acceptResolvedAddresses(
                LoadBalancer.ResolvedAddresses.newBuilder()
                    .setAddresses(eags)
                    .setAttributes(Attributes.EMPTY)
                    .build()));
  }

  /** Resolves {@code weights} and makes every endpoint READY; returns the READY picker. */
  LoadBalancer.SubchannelPicker readyPicker(int[] weights) {
    resolve(endpoints(weights));
    for (BenchSubchannel sc : List.copyOf(subchannels)) {
      syncContext.execute(
          () -> sc.listener.onSubchannelState(ConnectivityStateInfo.forNonError(ConnectivityState.READY)));
    }
    if (state != ConnectivityState.READY) {
      throw new IllegalStateException("balancer is " + state + ", expected READY");
    }
    return picker;
  }

  void shutdown() {
    syncContext.execute(balancer::shutdown);
  }

  @Override
  public LoadBalancer.Subchannel createSubchannel(LoadBalancer.CreateSubchannelArgs args) {
    BenchSubchannel sc = new BenchSubchannel(args);
    subchannels.add(sc);
    return sc;
  }

  @Override
  public void updateBalancingState(ConnectivityState newState, LoadBalancer.SubchannelPicker p) {
    state = newState;
    picker = p;
  }

  @Override
  public void refreshNameResolution() {}

  @Override
  public SynchronizationContext getSynchronizationContext() {
    return syncContext;
  }

  @Override
  public ScheduledExecutorService getScheduledExecutorService() {
    return TIMERS;
  }

  @Override
  public ManagedChannel createOobChannel(EquivalentAddressGroup eag, String authority) {
    throw new UnsupportedOperationException();
  }

  @Override
  public String getAuthority() {
    return "bench";
  }

  @Override
  public ChannelLogger getChannelLogger() {
    return NOOP_LOGGER;
  }

  @Override
  public NameResolver.Args getNameResolverArgs() {
    if (args == null) {
      throw new UnsupportedOperationException(); // as before metrics: the balancer observes nothing
    }
    return args;
  }

  private static final ChannelLogger NOOP_LOGGER =
      new ChannelLogger() {
        @Override
        public void log(ChannelLogLevel level, String message) {}

        @Override
        public void log(ChannelLogLevel level, String messageFormat, Object... args) {}
      };

  static final class BenchSubchannel extends LoadBalancer.Subchannel {
    private final Attributes attributes;
    private List<EquivalentAddressGroup> addresses;
    LoadBalancer.SubchannelStateListener listener;

    BenchSubchannel(LoadBalancer.CreateSubchannelArgs args) {
      this.addresses = args.getAddresses();
      this.attributes = args.getAttributes();
    }

    @Override
    public void start(LoadBalancer.SubchannelStateListener listener) {
      this.listener = listener;
    }

    @Override
    public void shutdown() {}

    @Override
    public void requestConnection() {}

    @Override
    public List<EquivalentAddressGroup> getAllAddresses() {
      return addresses;
    }

    @Override
    public void updateAddresses(List<EquivalentAddressGroup> addrs) {
      this.addresses = addrs;
    }

    @Override
    public Attributes getAttributes() {
      return attributes;
    }

    @Override
    public ChannelLogger getChannelLogger() {
      return NOOP_LOGGER;
    }
  }
}
