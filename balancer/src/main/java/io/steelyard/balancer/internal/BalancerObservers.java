package io.steelyard.balancer.internal;

import io.grpc.LoadBalancer;
import io.grpc.NameResolver;
import io.steelyard.balancer.spi.BalancerObserver;
import javax.annotation.Nullable;

/** Finds a channel's {@link BalancerObserver} factory, if it was given one. */
final class BalancerObservers {

  private BalancerObservers() {}

  /** The observer of a balancer of this channel, or null when the channel asked for none. */
  @Nullable
  static BalancerObserver forChannel(LoadBalancer.Helper helper) {
    NameResolver.Args args;
    try {
      args = helper.getNameResolverArgs();
    } catch (UnsupportedOperationException e) {
      return null; // a helper (a test's, another library's) that does not expose them
    }
    BalancerObserver.Factory factory = args == null ? null : args.getArg(BalancerObserver.KEY);
    return factory == null ? null : factory.newObserver(helper.getAuthority());
  }
}
