package io.steelyard.registry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.Map;
import org.junit.jupiter.api.Test;

class ZoneSharesTest {

  @Test
  void aZoneThatCarriesItsShareKeepsEveryCall() {
    ZoneShares s = ZoneShares.of("a", Map.of("a", 4L, "b", 4L), Map.of("a", 1L, "b", 1L), 2, 1);

    assertThat(s.outcome()).isEqualTo(ZoneShares.Outcome.ZONE_AWARE);
    assertThat(s.local()).isEqualTo(1.0);
    assertThat(s.fraction("a")).isEqualTo(1.0);
    assertThat(s.fraction("b")).isEqualTo(0.0);
  }

  @Test
  void aZoneWithHalfTheCapacityOfTheOtherKeepsTwoThirdsAgainstEqualDemand() {
    // One of two zone-a servers drained: up(a) = 2/6, exp(a) = 1/2, local = 2/3.
    ZoneShares s = ZoneShares.of("a", Map.of("a", 2L, "b", 4L), Map.of("a", 5L, "b", 5L), 1, 1);

    assertThat(s.local()).isCloseTo(2.0 / 3, within(1e-12));
    assertThat(s.remote()).containsOnlyKeys("b");
    assertThat(s.fraction("b")).isCloseTo(1.0 / 3, within(1e-12));
  }

  @Test
  void theSpillGoesBySpareCapacityOnly() {
    // up: a 1/6, b 3/6, c 2/6; exp 1/3 each: spare b = 1/6, c = 0.
    ZoneShares s =
        ZoneShares.of("a", Map.of("a", 1L, "b", 3L, "c", 2L), Map.of("a", 1L, "b", 1L, "c", 1L), 1, 1);

    assertThat(s.local()).isCloseTo(0.5, within(1e-12));
    assertThat(s.remote()).containsOnlyKeys("b");
    assertThat(s.fraction("b")).isCloseTo(0.5, within(1e-12));
    assertThat(s.fraction("c")).isEqualTo(0.0);
  }

  @Test
  void withoutSpareCapacityAnywhereTheSpillGoesByCapacity() {
    ZoneShares s =
        ZoneShares.of("a", Map.of("a", 1L, "b", 1L, "c", 3L), Map.of("a", 1L, "b", 1L, "c", 3L), 1, 1);

    // up == exp everywhere: nothing has spare, local keeps all.
    assertThat(s.local()).isEqualTo(1.0);

    ZoneShares none =
        ZoneShares.of("a", Map.of("a", 1L, "b", 1L, "c", 3L), Map.of("a", 3L, "b", 1L, "c", 1L), 1, 1);
    // up(b) = exp(b) = 1/5: no spare; up(c) = 3/5 > 1/5: spare only in c.
    assertThat(none.remote()).containsOnlyKeys("c");
    assertThat(none.local()).isCloseTo((1.0 / 5) / (3.0 / 5), within(1e-12));
  }

  @Test
  void aDrainedZoneSendsEverythingElsewhere() {
    ZoneShares s = ZoneShares.of("a", Map.of("b", 4L), Map.of("a", 1L, "b", 1L), 0, 0);

    assertThat(s.local()).isEqualTo(0.0);
    assertThat(s.fraction("b")).isEqualTo(1.0);
  }

  @Test
  void belowMinLocalEndpointsTheRuleDoesNotApply() {
    ZoneShares s = ZoneShares.of("a", Map.of("a", 2L, "b", 4L), Map.of("a", 1L, "b", 1L), 1, 2);

    assertThat(s.outcome()).isEqualTo(ZoneShares.Outcome.TOO_FEW_LOCAL);
    assertThat(s.zoneAware()).isFalse();
    assertThat(s.fraction("a")).isEqualTo(0.0);
  }

  @Test
  void aCallerZoneWithNoRegisteredCapacityRoutesByWeight() {
    ZoneShares s = ZoneShares.of("c", Map.of("a", 2L, "b", 4L), Map.of("a", 1L, "b", 1L), 0, 0);

    assertThat(s.outcome()).isEqualTo(ZoneShares.Outcome.NO_LOCAL_ZONE);
  }

  @Test
  void noCapacityAnywhereIsNamed() {
    ZoneShares s = ZoneShares.of("a", Map.of(), Map.of("a", 1L), 0, 0);

    assertThat(s.outcome()).isEqualTo(ZoneShares.Outcome.NO_CAPACITY);
  }

  @Test
  void zeroDemandEverywhereTakesDemandToBeCapacity() {
    ZoneShares s = ZoneShares.of("a", Map.of("a", 1L, "b", 3L), Map.of("a", 0L, "b", 0L), 1, 1);

    assertThat(s.local()).isEqualTo(1.0);
  }

  @Test
  void fractionsSumToOne() {
    ZoneShares s =
        ZoneShares.of("a", Map.of("a", 1L, "b", 5L, "c", 4L), Map.of("a", 2L, "b", 1L, "c", 1L), 1, 1);

    assertThat(s.fraction("a") + s.fraction("b") + s.fraction("c")).isCloseTo(1.0, within(1e-12));
  }
}
