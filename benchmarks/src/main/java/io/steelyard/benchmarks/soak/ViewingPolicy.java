package io.steelyard.benchmarks.soak;

import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer;
import io.grpc.LoadBalancerProvider;
import io.grpc.LoadBalancerRegistry;
import io.grpc.NameResolver.ConfigOrError;
import io.grpc.Status;
import io.steelyard.registry.EndpointWeights;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;

/**
 * {@code weighted_least_request} under a name of its own, keeping the last address list the
 * resolver gave it: what one channel believes, address to weight. One instance per channel, so
 * two channels of one service are seen apart.
 */
final class ViewingPolicy extends LoadBalancerProvider {

  private static final String DELEGATE = "weighted_least_request";

  private final String name;
  private final AtomicReference<Map<String, Integer>> view = new AtomicReference<>(Map.of());

  private ViewingPolicy(String name) {
    this.name = name;
  }

  /** Registers a policy {@code name} in the default registry and returns it. */
  static ViewingPolicy register(String name) {
    ViewingPolicy p = new ViewingPolicy(name);
    LoadBalancerRegistry.getDefaultRegistry().register(p);
    return p;
  }

  /** The channel's view: address to weight, empty before the first list. */
  Map<String, Integer> view() {
    return view.get();
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
    return name;
  }

  @Override
  public ConfigOrError parseLoadBalancingPolicyConfig(Map<String, ?> rawConfig) {
    return delegateProvider().parseLoadBalancingPolicyConfig(rawConfig);
  }

  @Override
  public LoadBalancer newLoadBalancer(LoadBalancer.Helper helper) {
    LoadBalancer delegate = delegateProvider().newLoadBalancer(helper);
    return new LoadBalancer() {
      @Override
      public Status acceptResolvedAddresses(ResolvedAddresses resolved) {
        Map<String, Integer> m = new TreeMap<>();
        for (EquivalentAddressGroup eag : resolved.getAddresses()) {
          Integer w = eag.getAttributes().get(EndpointWeights.WEIGHT);
          for (SocketAddress a : eag.getAddresses()) {
            InetSocketAddress isa = (InetSocketAddress) a;
            m.put(isa.getHostString() + ":" + isa.getPort(), w == null ? EndpointWeights.DEFAULT_WEIGHT : w);
          }
        }
        view.set(m);
        return delegate.acceptResolvedAddresses(resolved);
      }

      @Override
      public void handleNameResolutionError(Status error) {
        delegate.handleNameResolutionError(error);
      }

      @Override
      public void requestConnection() {
        delegate.requestConnection();
      }

      @Override
      public void shutdown() {
        delegate.shutdown();
      }
    };
  }

  private static LoadBalancerProvider delegateProvider() {
    return LoadBalancerRegistry.getDefaultRegistry().getProvider(DELEGATE);
  }
}
