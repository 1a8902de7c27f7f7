package io.steelyard.balancer.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class WeightedPolicyConfigTest {

  @Test
  void settingsLeftOutKeepTheirDefaults() {
    WeightedPolicyConfig config = WeightedPolicyConfig.builder().choiceCount(4).build();

    assertThat(config.choiceCount()).isEqualTo(4);
    assertThat(config.decayNanos()).isEqualTo(WeightedPolicyConfig.DEFAULT_DECAY_NANOS);
    assertThat(config.errorPenalty()).isEqualTo(WeightedPolicyConfig.DEFAULT_ERROR_PENALTY);
    assertThat(config.latency()).isEqualTo(WeightedPolicyConfig.DEFAULT_LATENCY);
    assertThat(config.panicThresholdPercent()).isZero();
    assertThat(config.clientSubset()).isNull();
    assertThat(config.slowStart()).isNull();
    assertThat(WeightedPolicyConfig.builder().build()).isEqualTo(WeightedPolicyConfig.DEFAULT);
  }

  @Test
  void aSettingGivenTwiceThrows() {
    assertThatThrownBy(() -> WeightedPolicyConfig.builder().choiceCount(3).choiceCount(4))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("choiceCount already set");
    assertThatThrownBy(
            () ->
                WeightedPolicyConfig.builder()
                    .slowStart(new SlowStartConfig(TimeUnit.SECONDS.toNanos(1), 1.0, 10))
                    .slowStart(new SlowStartConfig(TimeUnit.SECONDS.toNanos(2), 1.0, 10)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("slowStart already set");
    assertThatThrownBy(() -> WeightedPolicyConfig.builder().latency(false).latency(true))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("latency already set");
  }

  @Test
  void aValueOutOfRangeNamesTheSetting() {
    assertThatThrownBy(() -> WeightedPolicyConfig.builder().choiceCount(11))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("choiceCount: 11 (expected: 2..10)");
  }
}
