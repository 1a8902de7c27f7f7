package io.steelyard.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.List;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class MetricsTest {

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
  void combineSumsRatesAndMergesHistograms() {
    TreeMap<Double, Double> a = new TreeMap<>();
    a.put(0.01, 10.0);
    a.put(Double.POSITIVE_INFINITY, 10.0);
    TreeMap<Double, Double> b = new TreeMap<>();
    b.put(0.01, 0.0);
    b.put(Double.POSITIVE_INFINITY, 10.0);
    Metrics.Rates r = Metrics.combine(List.of(
        new Metrics.Rates(30, 0.1, 0.005, a, null),
        new Metrics.Rates(10, 0.5, 0.02, b, null),
        Metrics.Rates.none("no metrics URL")));

    assertThat(r.callsPerSecond()).isEqualTo(40);
    assertThat(r.errorRate()).isCloseTo((3 + 5) / 40.0, within(1e-9));
    assertThat(r.p99Seconds()).isEqualTo(0.01); // half the calls are beyond the last finite bound
  }

  @Test
  void nothingMeasuredCombinesToNothing() {
    assertThat(Metrics.combine(List.of(Metrics.Rates.none("first scrape"))).measured()).isFalse();
  }
}
