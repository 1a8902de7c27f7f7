package io.steelyard.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** What {@code top} computes from two scrapes: a histogram's quantile. */
class TopCommandTest {

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
