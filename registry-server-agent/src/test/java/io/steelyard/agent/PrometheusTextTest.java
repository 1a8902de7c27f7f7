package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Prometheus' text format as {@code steelyard top} and the console read it. */
class PrometheusTextTest {

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
}
