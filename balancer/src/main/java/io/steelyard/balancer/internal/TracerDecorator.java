package io.steelyard.balancer.internal;

import io.grpc.ClientStreamTracer;

/**
 * How a variant of {@code weighted_least_request} adds its own per-call work to an endpoint's
 * tracer factory: {@code balancer-orca} wraps it with grpc's per-call ORCA reader and sends each
 * report's utilization to {@link EndpointLoad#reportUtilization}.
 *
 * <p>Called once per endpoint (when its {@link EndpointLoad} is created, in the balancer's
 * SynchronizationContext); the factory it returns is used for every call to that endpoint, from
 * any thread.
 */
@FunctionalInterface
public interface TracerDecorator {

  /** Leaves the factory as it is. */
  TracerDecorator NONE = (factory, load) -> factory;

  /** The factory calls to {@code load}'s endpoint carry; must delegate to {@code own}. */
  ClientStreamTracer.Factory decorate(ClientStreamTracer.Factory own, EndpointLoad load);
}
