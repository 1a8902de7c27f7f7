package io.steelyard.discovery;

import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer;
import io.grpc.LoadBalancerProvider;
import io.grpc.LoadBalancerRegistry;
import io.grpc.Status;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A policy that only records what the channel's resolver hands it, keyed by the channel's
 * authority (our service name). Lets a test see exactly what reached a real channel.
 */
final class RecordingLoadBalancerProvider extends LoadBalancerProvider {

  static final String POLICY = "steelyard_test_recording";
  static final Map<String, List<Recorder>> BY_AUTHORITY = new ConcurrentHashMap<>();

  static synchronized void register() {
    if (LoadBalancerRegistry.getDefaultRegistry().getProvider(POLICY) == null) {
      LoadBalancerRegistry.getDefaultRegistry().register(new RecordingLoadBalancerProvider());
    }
  }

  /** Every channel (LB instance) created for {@code authority}, in creation order. */
  static List<Recorder> recorders(String authority) {
    return BY_AUTHORITY.computeIfAbsent(authority, a -> new CopyOnWriteArrayList<>());
  }

  static final class Recorder extends LoadBalancer {
    final List<List<EquivalentAddressGroup>> updates = new CopyOnWriteArrayList<>();
    final List<Status> errors = new CopyOnWriteArrayList<>();

    List<EquivalentAddressGroup> latest() {
      return updates.isEmpty() ? null : updates.get(updates.size() - 1);
    }

    @Override
    public Status acceptResolvedAddresses(ResolvedAddresses resolvedAddresses) {
      updates.add(resolvedAddresses.getAddresses());
      return Status.OK;
    }

    @Override
    public void handleNameResolutionError(Status error) {
      errors.add(error);
    }

    @Override
    public void shutdown() {}
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
    return POLICY;
  }

  @Override
  public LoadBalancer newLoadBalancer(LoadBalancer.Helper helper) {
    Recorder r = new Recorder();
    recorders(helper.getAuthority()).add(r);
    return r;
  }
}
