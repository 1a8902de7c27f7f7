package io.steelyard.balancer.internal;

import io.grpc.LoadBalancer;
import io.grpc.protobuf.services.HealthCheckingLoadBalancerUtil;

/**
 * Client-side health checking for steelyard's policies.
 *
 * <p>grpc-java applies a service config's {@code healthCheckConfig} only through a wrapper that
 * grpc-services installs around {@code round_robin}; any other policy must wrap itself. When
 * grpc-services is on the classpath the balancer is wrapped with {@link
 * HealthCheckingLoadBalancerUtil}, which watches {@code grpc.health.v1.Health/Watch} for each
 * subchannel once the channel's service config asks for it; a NOT_SERVING endpoint then looks
 * TRANSIENT_FAILURE to the balancer and is not picked. Without grpc-services (an optional
 * dependency) the balancer runs unwrapped and {@code healthCheckConfig} has no effect, exactly as
 * for grpc-java's own policies.
 */
final class HealthChecking {

  private static final boolean AVAILABLE = isAvailable();

  private HealthChecking() {}

  /** A balancer from {@code factory}, wrapped for health checking when grpc-services is present. */
  static LoadBalancer wrap(LoadBalancer.Factory factory, LoadBalancer.Helper helper) {
    if (AVAILABLE) {
      return Wrapper.wrap(factory, helper);
    }
    return factory.newLoadBalancer(helper);
  }

  private static boolean isAvailable() {
    try {
      Class.forName(
          "io.grpc.protobuf.services.HealthCheckingLoadBalancerUtil",
          false,
          HealthChecking.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  /** Loaded only when grpc-services is present. */
  private static final class Wrapper {
    static LoadBalancer wrap(LoadBalancer.Factory factory, LoadBalancer.Helper helper) {
      return HealthCheckingLoadBalancerUtil.newHealthCheckingLoadBalancer(factory, helper);
    }
  }
}
