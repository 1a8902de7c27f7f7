package io.steelyard.balancer.orca;

import io.grpc.services.MetricReport;
import io.steelyard.balancer.internal.EndpointLoad;
import io.grpc.xds.orca.OrcaPerRequestUtil;
import io.steelyard.balancer.internal.TracerDecorator;

/** How an ORCA report becomes the one utilization figure an {@link EndpointLoad} folds in. */
final class OrcaUtilization {

  /**
   * Reads ORCA from every call's trailers ({@code endpoint-load-metrics-bin}) with grpc's own
   * per-request utility, around the endpoint's own tracer.
   */
  static final TracerDecorator PER_CALL =
      (own, load) ->
          OrcaPerRequestUtil.getInstance()
              .newOrcaClientStreamTracerFactory(own, report -> fold(report, load));

  private OrcaUtilization() {}

  /**
   * The report's application utilization when the server set one ({@code > 0}), else its CPU
   * utilization: the choice grpc-java's {@code weighted_round_robin} makes.
   */
  static double of(MetricReport report) {
    double application = report.getApplicationUtilization();
    return application > 0 ? application : report.getCpuUtilization();
  }

  static void fold(MetricReport report, EndpointLoad load) {
    load.reportUtilization(of(report));
  }
}
