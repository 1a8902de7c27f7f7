package io.steelyard.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.List;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class MetricsTest {

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
