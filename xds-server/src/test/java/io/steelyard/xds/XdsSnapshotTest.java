package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.controlplane.cache.Resources.ResourceType;
import io.steelyard.registry.ServiceInstance;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class XdsSnapshotTest {

  private static ServiceResources service(String name, int weight) {
    return ServiceResources.of(name, List.of(ServiceInstance.of(name, "10.0.0.1:50051", weight)));
  }

  @Test
  void aChangeToOneServiceChangesTheVersionOnlyForClientsAskingForIt() {
    XdsSnapshot before = new XdsSnapshot(Map.of("a", service("a", 1), "b", service("b", 1)), 10);
    XdsSnapshot after = new XdsSnapshot(Map.of("a", service("a", 2), "b", service("b", 1)), 11);

    assertThat(after.version(ResourceType.ENDPOINT, List.of("b")))
        .isEqualTo(before.version(ResourceType.ENDPOINT, List.of("b")));
    assertThat(after.version(ResourceType.ENDPOINT, List.of("a")))
        .isNotEqualTo(before.version(ResourceType.ENDPOINT, List.of("a")));
    assertThat(after.version(ResourceType.ENDPOINT, List.of("a", "b")))
        .isNotEqualTo(before.version(ResourceType.ENDPOINT, List.of("a", "b")));
    assertThat(after.version(ResourceType.LISTENER, List.of("a")))
        .isEqualTo(before.version(ResourceType.LISTENER, List.of("a")));
  }

  @Test
  void wildcardVersionCoversEveryResourceOfTheType() {
    XdsSnapshot before = new XdsSnapshot(Map.of("a", service("a", 1), "b", service("b", 1)), 10);
    XdsSnapshot after = new XdsSnapshot(Map.of("a", service("a", 1), "b", service("b", 5)), 11);

    assertThat(after.version(ResourceType.ENDPOINT, List.of()))
        .isNotEqualTo(before.version(ResourceType.ENDPOINT, List.of()));
    assertThat(after.version(ResourceType.CLUSTER, List.of()))
        .isEqualTo(before.version(ResourceType.CLUSTER, List.of()));
  }

  @Test
  void versionsDependOnContentAndNamesNotOnRevisionOrRequestOrder() {
    XdsSnapshot one = new XdsSnapshot(Map.of("a", service("a", 1), "b", service("b", 3)), 10);
    XdsSnapshot two = new XdsSnapshot(Map.of("b", service("b", 3), "a", service("a", 1)), 99);

    assertThat(two.version(ResourceType.ENDPOINT, List.of("b", "a", "b")))
        .isEqualTo(one.version(ResourceType.ENDPOINT, List.of("a", "b")));
    assertThat(two.version(ResourceType.ENDPOINT, List.of()))
        .isEqualTo(one.version(ResourceType.ENDPOINT, List.of()));
  }

  @Test
  void aRequestForAServiceNotServedYetHasTheVersionOfAFirstRequest() {
    XdsSnapshot before = new XdsSnapshot(Map.of("a", service("a", 1)), 10);
    XdsSnapshot after = new XdsSnapshot(Map.of("a", service("a", 1), "b", service("b", 1)), 11);

    assertThat(before.version(ResourceType.LISTENER, List.of("b"))).isEmpty();
    assertThat(before.version(ResourceType.LISTENER, List.of("a", "b"))).isEmpty();
    assertThat(after.version(ResourceType.LISTENER, List.of("b"))).isNotEmpty();
  }

  @Test
  void servesListenersClustersAndAssignmentsByServiceName() {
    XdsSnapshot snapshot = new XdsSnapshot(Map.of("a", service("a", 1), "b", service("b", 1)), 10);

    assertThat(snapshot.listeners().resources()).containsOnlyKeys("a", "b");
    assertThat(snapshot.clusters().resources()).containsOnlyKeys("a", "b");
    assertThat(snapshot.endpoints().resources()).containsOnlyKeys("a", "b");
    assertThat(snapshot.routes().resources()).isEmpty();
    assertThat(snapshot.endpoints().versionedResources()).containsOnlyKeys("a", "b");
  }
}
