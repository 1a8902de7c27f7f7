package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;

import io.steelyard.balancer.spi.SlowStartConfig;
import io.steelyard.registry.ServiceInstance;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

class SlowStartRampsTest {

  private static final SlowStartConfig TEN_SECONDS =
      new SlowStartConfig(Duration.ofSeconds(10).toNanos(), 1.0, 10);
  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

  private static ServiceInstance at(String address, int weight) {
    return ServiceInstance.of("greeter", address, weight);
  }

  @Test
  void instancesOfTheFirstViewDoNotRamp() {
    SlowStartRamps ramps = new SlowStartRamps();
    List<ServiceInstance> view = List.of(at("10.0.0.1:1", 2));
    ramps.update(view, T0);
    assertThat(ramps.factors(view, TEN_SECONDS, T0)).containsExactly(1.0);
    assertThat(ramps.ramping(TEN_SECONDS, T0)).isFalse();
  }

  @Test
  void aJoiningInstanceFollowsTheBalancersCurveAndTheRampEnds() {
    SlowStartRamps ramps = new SlowStartRamps();
    ramps.update(List.of(at("10.0.0.1:1", 2)), T0);
    List<ServiceInstance> view = List.of(at("10.0.0.1:1", 2), at("10.0.0.2:1", 2));
    Instant joined = T0.plusSeconds(3);
    ramps.update(view, joined);
    SlowStartConfig curve = new SlowStartConfig(Duration.ofSeconds(10).toNanos(), 2.0, 5);
    for (long ms = 0; ms <= 12_000; ms += 500) {
      Instant now = joined.plusMillis(ms);
      double expected = curve.factor(Duration.ofMillis(ms).toNanos());
      assertThat(ramps.factors(view, curve, now)).containsExactly(1.0, expected);
      assertThat(ramps.ramping(curve, now)).isEqualTo(ms < 10_000);
    }
    assertThat(ramps.factors(view, curve, joined.plusSeconds(1))[1]).isEqualTo(Math.sqrt(0.1));
  }

  @Test
  void anUndrainedInstanceRampsAgainAndALeavingOneIsForgotten() {
    SlowStartRamps ramps = new SlowStartRamps();
    ramps.update(List.of(at("10.0.0.1:1", 2)), T0);
    ramps.update(List.of(at("10.0.0.1:1", 0)), T0.plusSeconds(1));
    List<ServiceInstance> back = List.of(at("10.0.0.1:1", 2));
    ramps.update(back, T0.plusSeconds(2));
    assertThat(ramps.factors(back, TEN_SECONDS, T0.plusSeconds(4))).containsExactly(0.2);
    ramps.update(List.of(), T0.plusSeconds(5));
    assertThat(ramps.ramping(TEN_SECONDS, T0.plusSeconds(5))).isFalse();
    assertThat(ramps.factors(back, null, T0.plusSeconds(4))).containsExactly(1.0);
  }

  @Test
  void stepsAreATenthOfTheWindowAndAtMostOneSecond() {
    assertThat(SlowStartRamps.step(TEN_SECONDS)).isEqualTo(Duration.ofSeconds(1));
    assertThat(SlowStartRamps.step(new SlowStartConfig(Duration.ofSeconds(60).toNanos(), 1, 10)))
        .isEqualTo(Duration.ofSeconds(1));
    assertThat(SlowStartRamps.step(new SlowStartConfig(Duration.ofSeconds(2).toNanos(), 1, 10)))
        .isEqualTo(Duration.ofMillis(200));
  }
}
