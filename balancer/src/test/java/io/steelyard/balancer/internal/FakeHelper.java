package io.steelyard.balancer.internal;

import static java.util.Objects.requireNonNull;

import io.grpc.Attributes;
import io.grpc.ChannelLogger;
import io.grpc.ConnectivityState;
import io.grpc.ConnectivityStateInfo;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer;
import io.grpc.ManagedChannel;
import io.grpc.NameResolver;
import io.grpc.SynchronizationContext;
import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * A small fake {@link LoadBalancer.Helper} in the style of grpc-java's own balancer tests: it
 * records every subchannel created and every balancing-state update, runs balancer work in a
 * {@link SynchronizationContext} whose uncaught-exception handler fails the test, and lets the
 * test drive subchannel states by hand.
 */
final class FakeHelper extends LoadBalancer.Helper {

  final SynchronizationContext syncContext =
      new SynchronizationContext(
          (thread, e) -> {
            throw new AssertionError("uncaught exception in the SynchronizationContext", e);
          });

  /** Every subchannel ever created, in creation order. */
  final List<FakeSubchannel> createdSubchannels = new ArrayList<>();

  final List<ConnectivityState> states = new ArrayList<>();
  final List<LoadBalancer.SubchannelPicker> pickers = new ArrayList<>();
  int refreshNameResolutionCount;

  @Override
  public LoadBalancer.Subchannel createSubchannel(LoadBalancer.CreateSubchannelArgs args) {
    syncContext.throwIfNotInThisSynchronizationContext();
    FakeSubchannel subchannel = new FakeSubchannel(args);
    createdSubchannels.add(subchannel);
    return subchannel;
  }

  @Override
  public void updateBalancingState(
      ConnectivityState newState, LoadBalancer.SubchannelPicker newPicker) {
    syncContext.throwIfNotInThisSynchronizationContext();
    states.add(requireNonNull(newState, "newState"));
    pickers.add(requireNonNull(newPicker, "newPicker"));
  }

  @Override
  public void refreshNameResolution() {
    refreshNameResolutionCount++;
  }

  @Override
  public SynchronizationContext getSynchronizationContext() {
    return syncContext;
  }

  @Override
  public ScheduledExecutorService getScheduledExecutorService() {
    return NeverRunningScheduler.INSTANCE;
  }

  @Override
  public ManagedChannel createOobChannel(EquivalentAddressGroup eag, String authority) {
    throw new UnsupportedOperationException();
  }

  @Override
  public String getAuthority() {
    return "fake-authority";
  }

  @Override
  public ChannelLogger getChannelLogger() {
    return NoopChannelLogger.INSTANCE;
  }

  @Override
  public NameResolver.Args getNameResolverArgs() {
    throw new UnsupportedOperationException();
  }

  ConnectivityState lastState() {
    return states.get(states.size() - 1);
  }

  LoadBalancer.SubchannelPicker lastPicker() {
    return pickers.get(pickers.size() - 1);
  }

  /** The live (not shut down) subchannels, keyed by their first address. */
  Map<SocketAddress, FakeSubchannel> liveSubchannels() {
    Map<SocketAddress, FakeSubchannel> live = new LinkedHashMap<>();
    for (FakeSubchannel sc : createdSubchannels) {
      if (!sc.shutdown) {
        live.put(sc.getAddresses().getAddresses().get(0), sc);
      }
    }
    return live;
  }

  /** Delivers {@code state} to the subchannel's listener inside the SynchronizationContext. */
  void deliver(FakeSubchannel subchannel, ConnectivityStateInfo state) {
    syncContext.execute(() -> subchannel.listener.onSubchannelState(state));
  }

  void deliver(FakeSubchannel subchannel, ConnectivityState state) {
    deliver(subchannel, ConnectivityStateInfo.forNonError(state));
  }

  final class FakeSubchannel extends LoadBalancer.Subchannel {
    private final Attributes attributes;
    private List<EquivalentAddressGroup> addresses;
    LoadBalancer.SubchannelStateListener listener;
    int connectionRequests;
    int addressUpdates;
    boolean shutdown;

    FakeSubchannel(LoadBalancer.CreateSubchannelArgs args) {
      this.addresses = args.getAddresses();
      this.attributes = args.getAttributes();
    }

    @Override
    public void start(LoadBalancer.SubchannelStateListener listener) {
      this.listener = requireNonNull(listener, "listener");
    }

    @Override
    public void shutdown() {
      shutdown = true;
    }

    @Override
    public void requestConnection() {
      connectionRequests++;
    }

    @Override
    public List<EquivalentAddressGroup> getAllAddresses() {
      return addresses;
    }

    @Override
    public void updateAddresses(List<EquivalentAddressGroup> addrs) {
      addressUpdates++;
      this.addresses = addrs;
    }

    @Override
    public Attributes getAttributes() {
      return attributes;
    }

    @Override
    public ChannelLogger getChannelLogger() {
      return NoopChannelLogger.INSTANCE;
    }

    @Override
    public String toString() {
      return "FakeSubchannel" + addresses;
    }
  }

  private static final class NoopChannelLogger extends ChannelLogger {
    static final NoopChannelLogger INSTANCE = new NoopChannelLogger();

    @Override
    public void log(ChannelLogLevel level, String message) {}

    @Override
    public void log(ChannelLogLevel level, String messageFormat, Object... args) {}
  }

  /**
   * Timers are accepted and never fire: the tests are about state and picks, not time, and a
   * real timer thread would race with the test thread in the SynchronizationContext.
   */
  private static final class NeverRunningScheduler extends ScheduledThreadPoolExecutor {
    static final NeverRunningScheduler INSTANCE = new NeverRunningScheduler();

    private NeverRunningScheduler() {
      super(0);
    }

    @Override
    public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
      return new PendingFuture<>();
    }

    @Override
    public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
      return new PendingFuture<>();
    }
  }

  private static final class PendingFuture<V> implements ScheduledFuture<V> {
    private boolean cancelled;

    @Override
    public long getDelay(TimeUnit unit) {
      return Long.MAX_VALUE;
    }

    @Override
    public int compareTo(Delayed o) {
      return 0;
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      cancelled = true;
      return true;
    }

    @Override
    public boolean isCancelled() {
      return cancelled;
    }

    @Override
    public boolean isDone() {
      return cancelled;
    }

    @Override
    public V get() {
      throw new UnsupportedOperationException();
    }

    @Override
    public V get(long timeout, TimeUnit unit) {
      throw new UnsupportedOperationException();
    }
  }
}
