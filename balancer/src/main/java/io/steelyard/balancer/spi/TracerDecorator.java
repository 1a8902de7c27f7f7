package io.steelyard.balancer.spi;

import io.grpc.ClientStreamTracer;
import java.util.function.DoubleConsumer;

/**
 * How a variant of {@code weighted_least_request} adds its own per-call work to an endpoint's
 * tracer factory, e.g. to read a load report from each call's trailers and hand the endpoint's
 * utilization to the picker's score: {@code balancer-orca} wraps the factory with grpc's per-call
 * ORCA reader.
 *
 * <pre>{@code
 * TracerDecorator orca = (own, utilization) ->
 *     OrcaPerRequestUtil.getInstance().newOrcaClientStreamTracerFactory(
 *         own, report -> utilization.accept(report.getCpuUtilization()));
 * }</pre>
 *
 * <p>Called once per endpoint (when the balancer starts tracking its load, in the balancer's
 * SynchronizationContext); the factory it returns is used for every call to that endpoint, from
 * any thread, and so is {@code utilization}, which is thread-safe.
 */
@FunctionalInterface
public interface TracerDecorator {

  /** Leaves the factory as it is. */
  TracerDecorator NONE = (own, utilization) -> own;

  /**
   * The factory calls to one endpoint carry; must delegate to {@code own}. {@code utilization}
   * takes the endpoint's reported utilization ({@code 0..1}; above 1 counts as saturated,
   * negative or not finite is ignored).
   */
  ClientStreamTracer.Factory decorate(ClientStreamTracer.Factory own, DoubleConsumer utilization);
}
