package io.steelyard.stork;

import static io.steelyard.stork.StorkFixture.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.smallrye.stork.api.ServiceInstance;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** While etcd is away the discovery names it within 3 s and keeps serving its last list. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class StaleViewTest {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  @Test
  void anUnreachableEtcdIsNamedWithinThreeSecondsWhileTheLastViewKeepsServing() throws Exception {
    try (Client client = EtcdConnection.of(etcd.endpoints()).connect();
        StorkFixture fixture = new StorkFixture()) {
      put(client, "/services/stale/10.0.0.1:8080", "10.0.0.1:8080|1");
      put(client, "/services/stale/10.0.0.2:8080", "10.0.0.2:8080|3");
      fixture.service("stale", null, Map.of(), Map.of("endpoints", etcd.endpoints()));
      assertThat(fixture.instances("stale")).hasSize(2);
      assertThat(fixture.discovery("stale").problem()).isEmpty();

      etcd.member(0).stop();
      await().atMost(Duration.ofSeconds(3)).untilAsserted(() ->
          assertThat(fixture.discovery("stale").problem()).hasValueSatisfying(p -> assertThat(p)
              .startsWith("etcd unreachable at " + etcd.endpoints() + ": ")
              .contains("serving the last 2 instances")));
      assertThat(fixture.instances("stale")).extracting(ServiceInstance::getHost)
          .containsExactly("10.0.0.1", "10.0.0.2");

      etcd.member(0).start();
      await().atMost(Duration.ofSeconds(30)).until(() -> fixture.discovery("stale").problem().isEmpty());
      assertThat(fixture.instances("stale")).hasSize(2);
    }
  }
}
