package io.steelyard.benchmarks.discovery;

import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer;
import io.grpc.LoadBalancerProvider;
import io.grpc.LoadBalancerRegistry;
import io.grpc.Status;
import java.util.List;
import java.util.function.BiConsumer;

/**
 * A policy that connects nothing and hands each address list to a callback, in the channel's
 * synchronization context, without keeping it: the testkit's {@code RecordingLoadBalancerProvider}
 * keeps every list, which a benchmark pushing 100,000 addresses per change cannot afford.
 */
final class TimingBalancerProvider extends LoadBalancerProvider {

  private final String policyName;
  private final BiConsumer<String, List<EquivalentAddressGroup>> onAddresses;

  private TimingBalancerProvider(String policyName, BiConsumer<String, List<EquivalentAddressGroup>> onAddresses) {
    this.policyName = policyName;
    this.onAddresses = onAddresses;
  }

  /** Registers a policy {@code policyName} calling {@code onAddresses(authority, list)}. */
  static void register(String policyName, BiConsumer<String, List<EquivalentAddressGroup>> onAddresses) {
    LoadBalancerRegistry.getDefaultRegistry().register(new TimingBalancerProvider(policyName, onAddresses));
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
    String authority = helper.getAuthority();
    return new LoadBalancer() {
      @Override
      public Status acceptResolvedAddresses(ResolvedAddresses resolved) {
        onAddresses.accept(authority, resolved.getAddresses());
        return Status.OK;
      }

      @Override
      public void handleNameResolutionError(Status error) {}

      @Override
      public void shutdown() {}
    };
  }
}
