package io.steelyard.testkit.grpc;

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
import java.util.Collections;
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
 * A fake {@link LoadBalancer.Helper} in the style of grpc-java's own balancer tests, for testing
 * a balancer without a channel: it records every subchannel created and every balancing-state
 * update, runs balancer work in a {@link SynchronizationContext} whose uncaught-exception handler
 * fails the test, and lets the test drive subchannel states by hand.
 *
 * <pre>{@code
 * FakeHelper helper = new FakeHelper();
 * LoadBalancer lb = provider.newLoadBalancer(helper);
 * helper.syncContext().execute(() -> lb.acceptResolvedAddresses(addresses));
 * helper.deliver(helper.createdSubchannels().get(0), ConnectivityState.READY);
 * PickResult pick = helper.lastPicker().pickSubchannel(null);
 * }</pre>
 *
 * <p>Timers are accepted and never fire (the tests are about state and picks; a real timer thread
 * would race with the test thread). Not thread-safe: use it from the test thread, entering the
 * balancer only through {@link #syncContext()}.
 */
public final class FakeHelper extends LoadBalancer.Helper {

  private final SynchronizationContext syncContext =
      new SynchronizationContext(
          (thread, e) -> {
            throw new AssertionError("uncaught exception in the SynchronizationContext", e);
          });

  private final List<FakeSubchannel> createdSubchannels = new ArrayList<>();
  private final List<ConnectivityState> states = new ArrayList<>();
  private final List<LoadBalancer.SubchannelPicker> pickers = new ArrayList<>();
  private int refreshNameResolutionCount;
  private NameResolver.Args nameResolverArgs; // null: getNameResolverArgs() is unsupported

  /** A helper whose channel exposes no name-resolver arguments. */
  public FakeHelper() {}

  /**
   * A helper whose channel hands its balancers {@code nameResolverArgs} (e.g. a metrics observer
   * set with {@code ManagedChannelBuilder.setNameResolverArg}).
   */
  public FakeHelper(NameResolver.Args nameResolverArgs) {
    this.nameResolverArgs = requireNonNull(nameResolverArgs, "nameResolverArgs");
  }

  /** The context the balancer must run in; its uncaught exceptions become {@link AssertionError}s. */
  public SynchronizationContext syncContext() {
    return syncContext;
  }

  /** Every subchannel ever created, in creation order, shut down or not. */
  public List<FakeSubchannel> createdSubchannels() {
    return Collections.unmodifiableList(createdSubchannels);
  }

  /** Every state the balancer published, in order. */
  public List<ConnectivityState> states() {
    return Collections.unmodifiableList(states);
  }

  /** Every picker the balancer published, in order, parallel to {@link #states()}. */
  public List<LoadBalancer.SubchannelPicker> pickers() {
    return Collections.unmodifiableList(pickers);
  }

  /** The last published state; fails when none was published. */
  public ConnectivityState lastState() {
    return states.get(states.size() - 1);
  }

  /** The last published picker; fails when none was published. */
  public LoadBalancer.SubchannelPicker lastPicker() {
    return pickers.get(pickers.size() - 1);
  }

  /**
   * Forgets every recorded state and picker but the last of each, so that a long-running driver (a
   * benchmark publishing thousands of pickers) does not retain them all.
   */
  public void forgetHistory() {
    if (states.size() > 1) {
      ConnectivityState state = lastState();
      LoadBalancer.SubchannelPicker picker = lastPicker();
      states.clear();
      pickers.clear();
      states.add(state);
      pickers.add(picker);
    }
  }

  /** How often the balancer asked for a re-resolution. */
  public int refreshNameResolutionCount() {
    return refreshNameResolutionCount;
  }

  /** The live (not shut down) subchannels, keyed by their first address, in creation order. */
  public Map<SocketAddress, FakeSubchannel> liveSubchannels() {
    Map<SocketAddress, FakeSubchannel> live = new LinkedHashMap<>();
    for (FakeSubchannel sc : createdSubchannels) {
      if (!sc.shutdown) {
        live.put(sc.getAddresses().getAddresses().get(0), sc);
      }
    }
    return live;
  }

  /** Delivers {@code state} to the subchannel's listener inside the SynchronizationContext. */
  public void deliver(FakeSubchannel subchannel, ConnectivityStateInfo state) {
    syncContext.execute(() -> subchannel.listener.onSubchannelState(state));
  }

  /** Delivers a non-error {@code state} to the subchannel's listener. */
  public void deliver(FakeSubchannel subchannel, ConnectivityState state) {
    deliver(subchannel, ConnectivityStateInfo.forNonError(state));
  }

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
    if (nameResolverArgs == null) {
      throw new UnsupportedOperationException();
    }
    return nameResolverArgs;
  }

  /** A subchannel that records what the balancer asked of it; its state comes from the test. */
  public static final class FakeSubchannel extends LoadBalancer.Subchannel {
    private final Attributes attributes;
    private List<EquivalentAddressGroup> addresses;
    private LoadBalancer.SubchannelStateListener listener;
    private int connectionRequests;
    private int addressUpdates;
    private boolean shutdown;

    FakeSubchannel(LoadBalancer.CreateSubchannelArgs args) {
      this.addresses = args.getAddresses();
      this.attributes = args.getAttributes();
    }

    /** How often the balancer asked this subchannel to connect. */
    public int connectionRequests() {
      return connectionRequests;
    }

    /** How often the balancer replaced this subchannel's addresses. */
    public int addressUpdates() {
      return addressUpdates;
    }

    /** Whether the balancer shut this subchannel down. */
    public boolean isShutdown() {
      return shutdown;
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

  /** Accepts timers and never runs them; stateless, so one instance serves every helper. */
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
    private volatile boolean cancelled;

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
