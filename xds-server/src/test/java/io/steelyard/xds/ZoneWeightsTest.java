package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.steelyard.balancer.spi.ZoneRoutingConfig;
import io.steelyard.registry.ServiceInstance;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ZoneWeightsTest {

  private static ServiceInstance in(String zone, int i, int weight) {
    return new ServiceInstance(
        "greeter", "10.0." + (zone.isEmpty() ? 9 : zone.charAt(0) - 'a') + "." + i + ":50051", weight,
        zone.isEmpty() ? Map.of() : Map.of("zone", zone));
  }

  /** Two zones, a and b, two servers of weight 2 each; weights of zone a's as given. */
  private static List<ServiceInstance> fleet(int a1, int a2) {
    return List.of(in("a", 1, a1), in("a", 2, a2), in("b", 1, 2), in("b", 2, 2));
  }

  private static double[] noRamp(List<ServiceInstance> instances) {
    double[] r = new double[instances.size()];
    Arrays.fill(r, 1.0);
    return r;
  }

  private static int[] weights(List<ServiceInstance> fleet, String caller, Map<String, Long> demand) {
    return ZoneWeights.weights(fleet, noRamp(fleet), caller, ZoneRoutingConfig.DEFAULT, demand);
  }

  /** Zone {@code zone}'s share of the weights (drained instances, served DRAINING, excluded). */
  private static double share(List<ServiceInstance> fleet, int[] w, String zone) {
    long total = 0;
    long in = 0;
    for (int i = 0; i < w.length; i++) {
      if (fleet.get(i).weight() == 0) {
        continue;
      }
      total += w[i];
      if (ZoneWeights.zone(fleet.get(i)).equals(zone)) {
        in += w[i];
      }
    }
    return (double) in / total;
  }

  @Test
  void callerOfAFullZoneKeepsItsCallsLocalWithTheOtherZoneAtTheFloor() {
    List<ServiceInstance> fleet = fleet(2, 2);
    int[] w = weights(fleet, "a", Map.of("a", 1L, "b", 1L));
    assertThat(w).containsExactly(2000, 2000, 1, 1);
    assertThat(share(fleet, w, "a")).isGreaterThan(0.999);
  }

  @Test
  void zoneLessCallerGetsTheRegisteredWeights() {
    List<ServiceInstance> fleet = fleet(2, 2);
    assertThat(weights(fleet, null, Map.of("a", 1L, "b", 1L))).containsExactly(2, 2, 2, 2);
  }

  @Test
  void aZoneWithHalfTheCapacityOfTheOtherAgainstEqualDemandKeepsTwoThirds() {
    List<ServiceInstance> fleet = fleet(2, 0);
    int[] w = weights(fleet, "a", Map.of("a", 1L, "b", 1L));
    assertThat(share(fleet, w, "a")).isCloseTo(2.0 / 3, within(0.005));
    assertThat(w[1]).isEqualTo(1); // drained, served DRAINING
    // Zone b's callers are not short: they keep theirs.
    assertThat(share(fleet, weights(fleet, "b", Map.of("a", 1L, "b", 1L)), "b")).isGreaterThan(0.999);
  }

  @Test
  void aZoneWhollyDrainedRoutesByWeightToTheOthers() {
    List<ServiceInstance> fleet = fleet(0, 0);
    int[] w = weights(fleet, "a", Map.of("a", 1L, "b", 1L));
    assertThat(w).containsExactly(1, 1, 2, 2);
  }

  @Test
  void belowMinLocalEndpointsCallsRouteByWeight() {
    List<ServiceInstance> fleet = fleet(2, 0);
    ZoneRoutingConfig panic = ZoneRoutingConfig.builder().minLocalEndpoints(2).build();
    int[] w = ZoneWeights.weights(fleet, noRamp(fleet), "a", panic, Map.of("a", 1L, "b", 1L));
    assertThat(w).containsExactly(2, 1, 2, 2);
  }

  @Test
  void disabledIsZoneBlind() {
    List<ServiceInstance> fleet = fleet(2, 2);
    ZoneRoutingConfig off = ZoneRoutingConfig.builder().enabled(false).build();
    assertThat(ZoneWeights.weights(fleet, noRamp(fleet), "a", off, Map.of("a", 1L)))
        .containsExactly(2, 2, 2, 2);
  }

  @Test
  void callerOfAZoneWithoutInstancesIsZoneBlind() {
    List<ServiceInstance> fleet = fleet(2, 2);
    assertThat(weights(fleet, "c", Map.of("c", 3L))).containsExactly(2, 2, 2, 2);
  }

  @Test
  void demandFollowsTheSubscribedNodes() {
    // Capacity 4 : 4, but three nodes in a for one in b: a carries 1/2 of 3/4 of the calls.
    List<ServiceInstance> fleet = fleet(2, 2);
    int[] w = weights(fleet, "a", Map.of("a", 3L, "b", 1L));
    assertThat(share(fleet, w, "a")).isCloseTo(2.0 / 3, within(0.005));
  }

  @Test
  void withoutSubscribedZonesTheDeclaredCapacityIsTheDemand() {
    // Declared 4 : 4 (the drained one counts 0 in declared: 2 : 4); up 2 : 4: a is not short.
    List<ServiceInstance> fleet = fleet(2, 0);
    int[] w = weights(fleet, "a", Map.of());
    assertThat(share(fleet, w, "a")).isGreaterThan(0.999);
    // Subscribers only in a zone without instances count for nothing either.
    assertThat(weights(fleet, "a", Map.of("c", 5L))).isEqualTo(w);
  }

  @Test
  void instancesWithoutZoneAreInTheEmptyZone() {
    List<ServiceInstance> fleet = List.of(in("", 1, 2), in("a", 1, 2));
    // The empty zone is a zone like any other: equal capacity and demand keep a's calls in a.
    assertThat(weights(fleet, "a", Map.of("a", 1L, "", 1L))).containsExactly(1, 2000);
    // With every caller in a, a carries only its half: the other half goes to the empty zone.
    assertThat(weights(fleet, "a", Map.of("a", 1L))).containsExactly(1000, 1000);
  }

  @Test
  void integerWeightsKeepEveryZoneShareWithinHalfAPoint() {
    // Uneven weights over three zones, one short: shares from ZoneShares, compared after rounding.
    List<ServiceInstance> fleet = new ArrayList<>();
    int[] registered = {1, 7, 13, 2, 1, 1, 5, 3, 11, 17, 1};
    String[] zones = {"a", "a", "a", "b", "b", "b", "c", "c", "c", "c", "c"};
    for (int i = 0; i < registered.length; i++) {
      fleet.add(in(zones[i], i, registered[i]));
    }
    Map<String, Long> demand = Map.of("a", 5L, "b", 3L, "c", 1L);
    for (String caller : List.of("a", "b", "c")) {
      int[] w = weights(fleet, caller, demand);
      var exact = ZoneWeights.shares(fleet, ramps(fleet), caller, ZoneRoutingConfig.DEFAULT, demand);
      for (String zone : List.of("a", "b", "c")) {
        assertThat(share(fleet, w, zone)).as(caller + "->" + zone).isCloseTo(exact.fraction(zone), within(0.005));
      }
    }
  }

  private static double[] ramps(List<ServiceInstance> fleet) {
    double[] e = new double[fleet.size()];
    for (int i = 0; i < e.length; i++) {
      e[i] = fleet.get(i).weight();
    }
    return e;
  }

  @Test
  void aRampingInstanceGetsItsFactorOfItsWeight() {
    List<ServiceInstance> fleet = fleet(2, 2);
    double[] ramp = noRamp(fleet);
    ramp[1] = 0.25;
    int[] blind = ZoneWeights.weights(fleet, ramp, null, ZoneRoutingConfig.DEFAULT, Map.of());
    // 2 : 0.5 : 2 : 2 over four localities of 1000 units.
    assertThat(blind).containsExactly(1231, 308, 1231, 1231);
    int[] local = ZoneWeights.weights(fleet, ramp, "a", ZoneRoutingConfig.DEFAULT, Map.of("a", 1L, "b", 1L));
    // a: 2.5 of capacity 6.5 against half the demand keeps 0.769 of its calls, 0.2 of them the ramp's.
    assertThat(share(fleet, local, "a")).isCloseTo(2.5 / 6.5 / 0.5, within(0.005));
    assertThat((double) local[1] / (local[0] + local[1])).isCloseTo(0.2, within(0.001));
  }
}
