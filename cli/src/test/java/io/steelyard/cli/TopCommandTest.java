package io.steelyard.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** What {@code top} computes from two scrapes: the text format read, a histogram's quantile. */
class TopCommandTest {

  @Test
  void samplesAreReadWithTheirLabelsAndCommentsAreSkipped() {
    List<PrometheusText.Sample> samples = PrometheusText.parse(String.join("\n",
        "# HELP steelyard_server_calls_total calls closed by the server",
        "# TYPE steelyard_server_calls_total counter",
        "steelyard_server_calls_total{method=\"a/B\",service=\"greeter\",status=\"OK\"} 12.0",
        "steelyard_server_call_duration_seconds_bucket{service=\"g\",le=\"+Inf\"} 3",
        "odd{k=\"quote \\\" and \\\\ and \\n\"} 1.5e3 1700000000000",
        "broken{k=\"unterminated} 1",
        ""));
    assertThat(samples).hasSize(3);
    assertThat(samples.get(0).labels()).containsEntry("method", "a/B").containsEntry("status", "OK");
    assertThat(samples.get(0).value()).isEqualTo(12.0);
    assertThat(samples.get(1).labels()).containsEntry("le", "+Inf");
    assertThat(samples.get(2).labels()).containsEntry("k", "quote \" and \\ and \n");
    assertThat(samples.get(2).value()).isEqualTo(1500.0);
  }

  @Test
  void theQuantileOfTheCallsBetweenTwoScrapesInterpolatesWithinItsBucket() {
    TreeMap<Double, Double> before = new TreeMap<>(Map.of(0.001, 10.0, 0.01, 10.0, 0.1, 10.0,
        Double.POSITIVE_INFINITY, 10.0));
    // 100 new calls: 90 under 1 ms, 10 between 10 and 100 ms.
    TreeMap<Double, Double> after = new TreeMap<>(Map.of(0.001, 100.0, 0.01, 100.0, 0.1, 110.0,
        Double.POSITIVE_INFINITY, 110.0));

    assertThat(TopCommand.quantile(0.5, before, after)).isCloseTo(0.001 * 50 / 90, within(1e-9));
    assertThat(TopCommand.quantile(0.99, before, after)).isCloseTo(0.01 + 0.09 * 9 / 10, within(1e-9));
    assertThat(TopCommand.quantile(0.99, after, after)).isNaN(); // no call in between
  }
}
