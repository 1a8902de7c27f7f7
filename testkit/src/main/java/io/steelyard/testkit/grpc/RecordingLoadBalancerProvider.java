package io.steelyard.testkit.grpc;

import static java.util.Objects.requireNonNull;

import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer;
import io.grpc.LoadBalancerProvider;
import io.grpc.LoadBalancerRegistry;
import io.grpc.Status;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.annotation.Nullable;

/**
 * A load-balancing policy that connects nothing and only records what a real channel's resolver
 * hands it, per channel authority (the etcd resolver's authority is the service name). Lets a
 * test or benchmark see exactly what reached the channel's balancer.
 *
 * <pre>{@code
 * try (RecordingLoadBalancerProvider recording =
 *     RecordingLoadBalancerProvider.register("test_recording")) {
 *   ManagedChannel channel = Grpc.newChannelBuilder("etcd:///greeter", creds)
 *       .defaultLoadBalancingPolicy(recording.getPolicyName()).build();
 *   channel.getState(true); // starts resolving; the channel never connects
 *   await().until(() -> recording.latest("greeter", 0) != null);
 * }
 * }</pre>
 *
 * <p>Threading: the recorders are filled in each channel's SynchronizationContext and read from
 * any thread; an optional {@link Listener} runs in that context, synchronously, on each update.
 */
public final class RecordingLoadBalancerProvider extends LoadBalancerProvider
    implements AutoCloseable {

  /** Called on each resolution or resolver error a recording balancer receives. */
  public interface Listener {
    /** {@code addresses} reached the balancer of a channel whose authority is {@code authority}. */
    void onAddresses(String authority, List<EquivalentAddressGroup> addresses);

    /** The channel's resolver reported {@code error}. */
    default void onError(String authority, Status error) {}
  }

  private static final Listener NO_LISTENER = (authority, addresses) -> {};

  private final String policyName;
  private final Listener listener;
  private final Map<String, List<Recorder>> byAuthority = new ConcurrentHashMap<>();

  private RecordingLoadBalancerProvider(String policyName, Listener listener) {
    this.policyName = requireNonNull(policyName, "policyName");
    this.listener = requireNonNull(listener, "listener");
  }

  /**
   * A provider of policy {@code policyName}, registered in grpc's default {@link
   * LoadBalancerRegistry} until {@link #close()}. Use a name no other test class uses at the same
   * time.
   */
  public static RecordingLoadBalancerProvider register(String policyName) {
    return register(policyName, NO_LISTENER);
  }

  /** As {@link #register(String)}, also calling {@code listener} on every update. */
  public static RecordingLoadBalancerProvider register(String policyName, Listener listener) {
    RecordingLoadBalancerProvider provider = new RecordingLoadBalancerProvider(policyName, listener);
    LoadBalancerRegistry.getDefaultRegistry().register(provider);
    return provider;
  }

  /** Every balancer (one per channel) created for {@code authority}, in creation order. */
  public List<Recorder> recorders(String authority) {
    return byAuthority.computeIfAbsent(authority, a -> new CopyOnWriteArrayList<>());
  }

  /**
   * The address list the {@code channelIndex}-th channel of {@code authority} received last, or
   * null when that channel has no balancer or no list yet.
   */
  @Nullable
  public List<EquivalentAddressGroup> latest(String authority, int channelIndex) {
    List<Recorder> recorders = recorders(authority);
    return recorders.size() <= channelIndex ? null : recorders.get(channelIndex).latest();
  }

  /** Removes this provider from the registry; balancers already created keep recording. */
  @Override
  public void close() {
    LoadBalancerRegistry.getDefaultRegistry().deregister(this);
  }

  @Override
  public boolean isAvailable() {
    return true;
  }

  @Override
  public int getPriority() {
    return 5;
  }

  @Override
  public String getPolicyName() {
    return policyName;
  }

  @Override
  public LoadBalancer newLoadBalancer(LoadBalancer.Helper helper) {
    Recorder recorder = new Recorder(helper.getAuthority(), listener);
    recorders(helper.getAuthority()).add(recorder);
    return recorder;
  }

  /** The balancer of one channel: what it received, in order. */
  public static final class Recorder extends LoadBalancer {
    private final String authority;
    private final Listener listener;
    private final List<List<EquivalentAddressGroup>> updates = new CopyOnWriteArrayList<>();
    private final List<Status> errors = new CopyOnWriteArrayList<>();

    Recorder(String authority, Listener listener) {
      this.authority = authority;
      this.listener = listener;
    }

    /** Every address list received, oldest first. */
    public List<List<EquivalentAddressGroup>> updates() {
      return updates;
    }

    /** Every resolver error received, oldest first. */
    public List<Status> errors() {
      return errors;
    }

    /** The last address list received, or null before the first. */
    @Nullable
    public List<EquivalentAddressGroup> latest() {
      return updates.isEmpty() ? null : updates.get(updates.size() - 1);
    }

    @Override
    public Status acceptResolvedAddresses(ResolvedAddresses resolvedAddresses) {
      // Listener first: a benchmark timing the arrival should not pay for the list's copy.
      listener.onAddresses(authority, resolvedAddresses.getAddresses());
      updates.add(resolvedAddresses.getAddresses());
      return Status.OK;
    }

    @Override
    public void handleNameResolutionError(Status error) {
      listener.onError(authority, error);
      errors.add(error);
    }

    @Override
    public void shutdown() {}
  }
}
