package io.steelyard.balancer.orca;

import io.grpc.services.MetricReport;
import io.grpc.xds.orca.OrcaPerRequestUtil;
import io.steelyard.balancer.spi.TracerDecorator;

/** How an ORCA report becomes the one utilization figure an endpoint's load folds in. */
final class OrcaUtilization {

  /**
   * Reads ORCA from every call's trailers ({@code endpoint-load-metrics-bin}) with grpc's own
   * per-request utility, around the endpoint's own tracer.
   */
  static final TracerDecorator PER_CALL =
      (own, utilization) ->
          OrcaPerRequestUtil.getInstance()
              .newOrcaClientStreamTracerFactory(own, report -> utilization.accept(of(report)));

  private OrcaUtilization() {}

  /**
   * The report's application utilization when the server set one ({@code > 0}), else its CPU
   * utilization: the choice grpc-java's {@code weighted_round_robin} makes.
   */
  static double of(MetricReport report) {
    double application = report.getApplicationUtilization();
    return application > 0 ? application : report.getCpuUtilization();
  }
}
