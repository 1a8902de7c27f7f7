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
  private final Subscribers subscribers = new Subscribers(new Subscribers.Listener() {
    @Override
    public void demandChanged(Set<String> services) {
      changes.add(services);
    }

    @Override
    public void zoneSeen(String zone) {
      zonesSeen.add(zone);
    }
  });

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
    assertThat(subscribers.groupOf(node("n2", "a"))).isEqualTo(Subscribers.groupOf("a"));
    assertThat(Subscribers.zoneOfGroup(Subscribers.groupOf("a"))).isEqualTo("a");
    assertThat(Subscribers.zoneOfGroup(XdsPublisher.GROUP)).isNull();
    subscribers.node(1, bad);
    subscribers.subscribed(1, List.of("greeter"));
    assertThat(subscribers.demand("greeter")).isEmpty();
    assertThat(zonesSeen).isEmpty();
  }
}
