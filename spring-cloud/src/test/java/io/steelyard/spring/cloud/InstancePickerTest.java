package io.steelyard.spring.cloud;

import static org.assertj.core.api.Assertions.assertThat;

import io.steelyard.balancer.spi.EffectiveWeights;
import io.steelyard.balancer.spi.SlowStartConfig;
import io.steelyard.balancer.spi.SlowStartWeights;
import io.steelyard.registry.ServiceInstance;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class InstancePickerTest {

  private static final long NO_RAMP = SlowStartWeights.NOT_RAMPING;

  private static final SlowStartConfig RAMP_10S =
      new SlowStartConfig(Duration.ofSeconds(10).toNanos(), 1.0, 10);

  @Test
  void picksInProportionToWeight() {
    InstancePicker p = picker(new int[] {1, 3}, new long[] {NO_RAMP, NO_RAMP}, null, 0);

    Map<String, Integer> counts = pick(p, 40_000);

    assertThat(counts.get("10.0.0.1:80") / 40_000.0).isBetween(0.24, 0.26);
    assertThat(counts.get("10.0.0.2:80") / 40_000.0).isBetween(0.74, 0.76);
  }

  @Test
  void neverPicksADrainedInstanceWhileAnotherHasWeight() {
    InstancePicker p = picker(new int[] {0, 5, 0}, new long[] {NO_RAMP, NO_RAMP, NO_RAMP}, null, 0);

    assertThat(pick(p, 1_000)).containsOnlyKeys("10.0.0.2:80");
    assertThat(p.instances()).hasSize(3);
  }

  @Test
  void picksEveryInstanceEquallyWhenAllAreDrained() {
    InstancePicker p = picker(new int[] {0, 0}, new long[] {NO_RAMP, NO_RAMP}, null, 0);

    Map<String, Integer> counts = pick(p, 10_000);

    assertThat(counts.get("10.0.0.1:80") / 10_000.0).isBetween(0.47, 0.53);
  }

  @Test
  void answersEmptyWithoutInstances() {
    assertThat(InstancePicker.empty().pick(42)).isSameAs(InstancePicker.EMPTY);
  }

  @Test
  void returnsTheSameAnswerObjectForTheSameInstance() {
    InstancePicker p = picker(new int[] {1}, new long[] {NO_RAMP}, null, 0);

    assertThat(p.pick(1)).isSameAs(p.pick(-7));
  }

  @Test
  void aRampingInstanceGetsItsRampedShareAndThePickerAsksToBeRebuilt() {
    SlowStartConfig ramp = RAMP_10S;
    long start = 1_000_000_000L;
    // Half-way through its ramp the new instance (weight 1) counts 0.5 against the other's 1.
    InstancePicker p = picker(new int[] {1, 1}, new long[] {NO_RAMP, start}, ramp,
        start + Duration.ofSeconds(5).toNanos());

    Map<String, Integer> counts = pick(p, 30_000);

    assertThat(counts.get("10.0.0.2:80") / 30_000.0).isBetween(0.31, 0.36);
    assertThat(p.refreshAtNanos()).isEqualTo(start + Duration.ofSeconds(5).toNanos() + SlowStartWeights.refreshDelayNanos(ramp));
  }

  @Test
  void aFinishedRampCountsTheFullWeightAndNeedsNoRebuild() {
    InstancePicker p = picker(new int[] {1, 1}, new long[] {NO_RAMP, 0}, RAMP_10S, Duration.ofSeconds(11).toNanos());

    assertThat(p.refreshAtNanos()).isEqualTo(InstancePicker.NEVER);
    assertThat(pick(p, 20_000).get("10.0.0.2:80") / 20_000.0).isBetween(0.48, 0.52);
  }

  @Test
  void aRampStartsAtTheFloorPercent() {
    long start = 1_000_000_000L;
    // Just begun: the new instance (weight 1) counts 0.1 against the other's 1.
    InstancePicker p = picker(new int[] {1, 1}, new long[] {NO_RAMP, start}, RAMP_10S, start);

    assertThat(pick(p, 30_000).get("10.0.0.2:80") / 30_000.0).isBetween(0.07, 0.11);
  }

  @Test
  void aDrainedInstanceDoesNotRampWhileAnotherDoes() {
    long start = 1_000_000_000L;
    InstancePicker p = picker(new int[] {0, 1, 1}, new long[] {start, NO_RAMP, start}, RAMP_10S, start);

    assertThat(pick(p, 1_000)).doesNotContainKey("10.0.0.1:80");
  }

  @Test
  void weightOfAForeignInstanceComesFromItsMetadata() {
    var foreign = new org.springframework.cloud.client.DefaultServiceInstance(
        "a", "s", "h", 80, false, Map.of("weight", "7"));
    var noWeight = new org.springframework.cloud.client.DefaultServiceInstance("b", "s", "h", 81, false);

    assertThat(SteelyardLoadBalancer.weightOf(foreign)).isEqualTo(7);
    assertThat(SteelyardLoadBalancer.weightOf(noWeight)).isEqualTo(1);
  }

  private static InstancePicker picker(int[] weights, long[] starts, SlowStartConfig ramp, long now) {
    List<org.springframework.cloud.client.ServiceInstance> list = new ArrayList<>();
    for (int i = 0; i < weights.length; i++) {
      list.add(new SteelyardServiceInstance(ServiceInstance.of("s", "10.0.0." + (i + 1) + ":80", weights[i])));
    }
    return InstancePicker.of(list, EffectiveWeights.of(weights), starts, ramp, now);
  }

  private static Map<String, Integer> pick(InstancePicker p, int n) {
    SplittableRandom random = new SplittableRandom(7);
    Map<String, Integer> counts = new HashMap<>();
    for (int i = 0; i < n; i++) {
      counts.merge(p.pick(random.nextLong()).block().getServer().getInstanceId(), 1, Integer::sum);
    }
    return counts;
  }
}
