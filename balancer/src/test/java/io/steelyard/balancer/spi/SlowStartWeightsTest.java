package io.steelyard.balancer.spi;

import static io.steelyard.balancer.spi.SlowStartWeights.NOT_RAMPING;
import static org.assertj.core.api.Assertions.assertThat;

import io.steelyard.registry.EndpointWeights;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The slow-start weight function every balancer and integration calls. */
class SlowStartWeightsTest {

  private static final long WINDOW_NANOS = TimeUnit.SECONDS.toNanos(10);
  private static final SlowStartConfig LINEAR = new SlowStartConfig(WINDOW_NANOS, 1.0, 10);
  private static final long NOW = TimeUnit.HOURS.toNanos(1);

  @Test
  void withoutARampTheWeightsStayAsTheyAre() {
    int[] weights = {3, 5};

    assertThat(SlowStartWeights.ramping(LINEAR, weights, new long[] {NOT_RAMPING, NOT_RAMPING}, NOW))
        .isFalse();
    assertThat(SlowStartWeights.apply(LINEAR, weights, new long[] {NOT_RAMPING, NOT_RAMPING}, NOW))
        .isEqualTo(1);
    assertThat(weights).containsExactly(3, 5);
  }

  @Test
  void aRampingEndpointGetsItsFactorOnTheScaleEveryOtherWeightIsMultipliedBy() {
    int[] weights = {1, 1};
    long[] starts = {NOT_RAMPING, NOW - WINDOW_NANOS / 2};

    assertThat(SlowStartWeights.ramping(LINEAR, weights, starts, NOW)).isTrue();
    assertThat(SlowStartWeights.apply(LINEAR, weights, starts, NOW)).isEqualTo(SlowStartWeights.SCALE);
    assertThat(weights).containsExactly(100, 50);
  }

  @Test
  void aRampStartsAtItsFloorAndEndsAfterTheWindow() {
    int[] justStarted = {1, 1};
    SlowStartWeights.apply(LINEAR, justStarted, new long[] {NOT_RAMPING, NOW}, NOW);
    assertThat(justStarted).containsExactly(100, 10);

    int[] done = {1, 1};
    long[] over = {NOT_RAMPING, NOW - WINDOW_NANOS};
    assertThat(SlowStartWeights.ramping(LINEAR, done, over, NOW)).isFalse();
    assertThat(SlowStartWeights.apply(LINEAR, done, over, NOW)).isEqualTo(1);
    assertThat(done).containsExactly(1, 1);
  }

  @Test
  void aDrainedEndpointDoesNotRampAndStaysAtZero() {
    int[] weights = {0, 2};
    long[] starts = {NOW, NOT_RAMPING};

    assertThat(SlowStartWeights.ramping(LINEAR, weights, starts, NOW)).isFalse();

    int[] withAnotherRamp = {0, 2, 2};
    SlowStartWeights.apply(LINEAR, withAnotherRamp, new long[] {NOW, NOT_RAMPING, NOW}, NOW);
    assertThat(withAnotherRamp).containsExactly(0, 200, 20);
  }

  @Test
  void theScaleShrinksSoNoWeightExceedsTheLargestAndARampingWeightIsAtLeastOne() {
    int[] weights = {EndpointWeights.MAX_WEIGHT / 10, 1};
    long[] starts = {NOT_RAMPING, NOW};

    assertThat(SlowStartWeights.apply(LINEAR, weights, starts, NOW)).isEqualTo(10);
    assertThat(weights).containsExactly(EndpointWeights.MAX_WEIGHT, 1);
  }

  @Test
  void aPickerBuiltDuringARampIsGoodForATwentiethOfTheWindowAndAtLeast250Ms() {
    assertThat(SlowStartWeights.refreshDelayNanos(LINEAR)).isEqualTo(TimeUnit.MILLISECONDS.toNanos(500));
    assertThat(SlowStartWeights.refreshDelayNanos(new SlowStartConfig(TimeUnit.SECONDS.toNanos(2), 1, 10)))
        .isEqualTo(TimeUnit.MILLISECONDS.toNanos(250));
  }
}
