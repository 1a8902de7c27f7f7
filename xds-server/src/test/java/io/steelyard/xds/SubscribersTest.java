package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.config.core.v3.Locality;
import io.envoyproxy.envoy.config.core.v3.Node;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class SubscribersTest {

  private final List<Set<String>> changes = new ArrayList<>();
  private final List<String> zonesSeen = new ArrayList<>();
  private final List<String> zonesIdle = new ArrayList<>();
  private final Subscribers.Listener listener = new Subscribers.Listener() {
    @Override
    public void demandChanged(Set<String> services) {
      changes.add(services);
    }

    @Override
    public void zoneSeen(String zone) {
      zonesSeen.add(zone);
    }

    @Override
    public void zoneIdle(String zone) {
      zonesIdle.add(zone);
    }
  };
  private final Subscribers subscribers = new Subscribers(listener, Subscribers.DEFAULT_MAX_ZONES);

  private static Node node(String id, String zone) {
    return Node.newBuilder().setId(id).setLocality(Locality.newBuilder().setZone(zone)).build();
  }

  @Test
  void aNodeCountsOnceInItsZoneWhateverItsStreams() {
    subscribers.node(1, node("n1", "a"));
    subscribers.node(2, node("n1", "a"));
    subscribers.node(3, node("n2", "b"));
    subscribers.node(4, node("n3", ""));
    subscribers.subscribed(1, List.of("greeter"));
    subscribers.subscribed(2, List.of("greeter", "other"));
    subscribers.subscribed(3, List.of("greeter"));
    subscribers.subscribed(4, List.of("greeter"));
    assertThat(subscribers.demand("greeter")).isEqualTo(Map.of("a", 1L, "b", 1L));
    assertThat(subscribers.demand("other")).isEqualTo(Map.of("a", 1L));
    assertThat(zonesSeen).containsExactly("a", "b");

    subscribers.closed(1);
    assertThat(subscribers.demand("greeter")).isEqualTo(Map.of("a", 1L, "b", 1L));
    subscribers.subscribed(2, List.of("other"));
    assertThat(subscribers.demand("greeter")).isEqualTo(Map.of("b", 1L));
    subscribers.subscribed(3, List.of(), List.of("greeter"));
    assertThat(subscribers.demand("greeter")).isEmpty();
    assertThat(changes).contains(Set.of("greeter"));
  }

  @Test
  void aStreamKeepsTheNodeOfItsFirstRequest() {
    subscribers.node(1, node("n1", "a"));
    subscribers.node(1, node("n1", "b"));
    subscribers.subscribed(1, List.of("greeter"));
    assertThat(subscribers.demand("greeter")).isEqualTo(Map.of("a", 1L));
  }

  @Test
  void anInvalidZoneIsZoneLess() {
    Node bad = node("n1", "a b/c");
    assertThat(subscribers.zoneOf(bad)).isNull();
    assertThat(subscribers.groupOf(bad)).isEqualTo(XdsPublisher.GROUP);
    assertThat(subscribers.groupOf(node("n2", "a"))).as("no stream of zone a yet").isEqualTo(XdsPublisher.GROUP);
    subscribers.node(2, node("n2", "a"));
    assertThat(subscribers.groupOf(node("n2", "a"))).isEqualTo(Subscribers.groupOf("a"));
    assertThat(Subscribers.zoneOfGroup(Subscribers.groupOf("a"))).isEqualTo("a");
    assertThat(Subscribers.zoneOfGroup(XdsPublisher.GROUP)).isNull();
    subscribers.node(1, bad);
    subscribers.subscribed(1, List.of("greeter"));
    assertThat(subscribers.demand("greeter")).isEmpty();
    assertThat(zonesSeen).containsExactly("a");
  }

  @Test
  void anInvalidZoneIsLoggedOncePerNode() {
    try (Logs logs = Logs.of(Subscribers.class)) {
      Node bad = node("n1", "a b/c");
      subscribers.node(1, bad);
      subscribers.node(2, bad);
      subscribers.groupOf(bad);
      subscribers.node(3, node("n2", "a b/c"));

      assertThat(logs.lines()).hasSize(2);
      assertThat(logs.lines().get(0)).startsWith("WARN Client 'n1' names an invalid zone, served as zone-less: ");
      assertThat(logs.lines().get(1)).startsWith("WARN Client 'n2' names an invalid zone, served as zone-less: ");
    }
  }

  @Test
  void aZoneIsIdleWhenItsLastStreamClosesAndForgottenOnlyWhileIdle() {
    subscribers.node(1, node("n1", "a"));
    subscribers.node(2, node("n2", "a"));
    subscribers.closed(1);
    assertThat(zonesIdle).isEmpty();
    assertThat(subscribers.forgetIfIdle("a")).isFalse();

    subscribers.closed(2);
    assertThat(zonesIdle).containsExactly("a");
    assertThat(subscribers.groupOf(node("n3", "a"))).as("in its grace").isEqualTo(Subscribers.groupOf("a"));
    assertThat(subscribers.forgetIfIdle("a")).isTrue();
    assertThat(subscribers.groupOf(node("n3", "a"))).isEqualTo(XdsPublisher.GROUP);

    subscribers.node(3, node("n3", "a"));
    assertThat(zonesSeen).containsExactly("a", "a");
  }

  @Test
  void aZoneOverTheBoundIsServedZoneLessWithOneLinePerNode() {
    Subscribers two = new Subscribers(listener, 2);
    try (Logs logs = Logs.of(Subscribers.class)) {
      two.node(1, node("n1", "a"));
      two.node(2, node("n2", "b"));
      two.node(3, node("n3", "c"));
      two.node(4, node("n3", "c"));
      two.subscribed(3, List.of("greeter"));

      assertThat(two.groupOf(node("n3", "c"))).isEqualTo(XdsPublisher.GROUP);
      assertThat(two.demand("greeter")).isEmpty();
      assertThat(zonesSeen).containsExactly("a", "b");
      assertThat(logs.lines()).containsExactly(
          "WARN Client 'n3' names zone 'c' while 2 zones are served already (--max-zones): served as zone-less");
    }

    two.closed(1);
    two.forgetIfIdle("a");
    two.node(5, node("n4", "c"));
    assertThat(two.groupOf(node("n4", "c"))).as("room again").isEqualTo(Subscribers.groupOf("c"));
  }
}
