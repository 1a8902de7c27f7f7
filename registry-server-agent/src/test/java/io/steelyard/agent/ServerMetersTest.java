package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.grpc.Metadata;
import io.grpc.ServerStreamTracer;
import io.grpc.Status;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** The agent's call meters as {@code steelyard top} and the console read them back. */
class ServerMetersTest {

  private static final String SCRAPE = String.join("\n",
      "# TYPE steelyard_server_calls_total counter",
      "steelyard_server_calls_total{service=\"greeter\",status=\"OK\"} 90",
      "steelyard_server_calls_total{service=\"greeter\",status=\"UNAVAILABLE\"} 10",
      "steelyard_server_calls_total{service=\"other\",status=\"OK\"} 5000",
      "steelyard_server_call_duration_seconds_bucket{service=\"greeter\",le=\"0.01\"} 50",
      "steelyard_server_call_duration_seconds_bucket{service=\"greeter\",le=\"0.1\"} 99",
      "steelyard_server_call_duration_seconds_bucket{service=\"greeter\",le=\"+Inf\"} 100",
      "");

  @Test
  void parseKeepsOnlyTheServicesSamples() {
    ServerMeters.Scrape s = ServerMeters.read(7, "greeter", SCRAPE);

    assertThat(s.calls()).isEqualTo(100);
    assertThat(s.errors()).isEqualTo(10);
    assertThat(s.buckets()).containsEntry(0.01, 50.0).containsEntry(Double.POSITIVE_INFINITY, 100.0);
  }

  @Test
  void quantileInterpolatesWithinTheBucketAsPrometheusDoes() {
    TreeMap<Double, Double> deltas = new TreeMap<>();
    deltas.put(0.01, 50.0);
    deltas.put(0.1, 100.0);
    deltas.put(Double.POSITIVE_INFINITY, 100.0);

    assertThat(ServerMeters.quantile(0.5, deltas)).isCloseTo(0.01, within(1e-9));
    assertThat(ServerMeters.quantile(0.99, deltas)).isCloseTo(0.01 + 0.09 * 49 / 50, within(1e-9));
    assertThat(ServerMeters.quantile(0.99, new TreeMap<>())).isNaN();
  }

  @Test
  void theAgentsOwnMetersReadBackThroughPrometheus() {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try {
      ServerStreamTracer.Factory calls = AgentMetrics.of(registry).serverCalls("greeter");
      calls.newServerStreamTracer("greeter.Greeter/SayHello", new Metadata()).streamClosed(Status.OK);
      calls.newServerStreamTracer("greeter.Greeter/SayHello", new Metadata()).streamClosed(Status.UNAVAILABLE);

      ServerMeters.Scrape s = ServerMeters.read(1, "greeter", registry.scrape());

      assertThat(s.error()).isNull();
      assertThat(s.calls()).isEqualTo(2);
      assertThat(s.errors()).isEqualTo(1);
      assertThat(s.buckets()).containsEntry(Double.POSITIVE_INFINITY, 2.0);
    } finally {
      registry.close();
    }
  }
}
