package io.steelyard.balancer.spi;

import io.grpc.NameResolver;
import java.util.List;

/**
 * Told what one balancer's endpoints look like after each update: the hook behind {@code
 * io.steelyard.balancer.BalancerMetrics}, outside the pick path (it runs where the picker is
 * built, never where it picks). The balancer finds its factory in the channel's name-resolver
 * arguments under {@link #KEY}; without one it observes nothing and pays nothing.
 *
 * <p>Threading: {@link #update} and {@link #close} run in the balancer's SynchronizationContext;
 * an implementation must not block there.
 */
public interface BalancerObserver {

  /** Where a channel keeps its observer factory ({@code ManagedChannelBuilder.setNameResolverArg}). */
  NameResolver.Args.Key<Factory> KEY = NameResolver.Args.Key.create("io.steelyard.balancer.observer");

  /** Makes the observer of one balancer. */
  interface Factory {
    /** @param service the channel's authority: the service name for {@code etcd:///SERVICE} */
    BalancerObserver newObserver(String service);
  }

  /** Every endpoint with a child, in the balancer's order, after a state or weight change. */
  void update(List<EndpointState> endpoints);

  /** The balancer shut down. */
  void close();
}
