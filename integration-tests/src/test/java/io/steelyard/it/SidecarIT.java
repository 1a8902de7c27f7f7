package io.steelyard.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.steelyard.examples.GreeterClient;
import io.steelyard.examples.GreeterServer;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.admin.InstanceStore;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A server that cannot embed the agent (here a greeter with {@code --register false}) is
 * registered by the CLI sidecar, {@code steelyard register}, and clients find and call it; when
 * the sidecar stops, the registration goes with it.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SidecarIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  @Test
  void serverRegisteredBySidecarIsDiscoveredAndCalled() throws Exception {
    String service = "sidecar";
    try (Greeters greeters = new Greeters(etcd.endpoints(), service);
        Client kv = EtcdConnection.of(etcd.endpoints()).connect()) {
      GreeterServer server = greeters.add(greeters.builder().register(false).build().start());
      InstanceStore store = new InstanceStore(kv, KeyLayout.defaults(), Duration.ofSeconds(5));
      assertThat(store.list(service, false)).isEmpty();

      Process sidecar =
          Cli.start(etcd.endpoints(), "register", service, server.address(), "--weight", "3", "--ttl", "5s");
      try {
        await().atMost(Duration.ofSeconds(30)).until(() -> store.get(service, server.address()).isPresent());

        try (GreeterClient client = GreeterClient.builder(etcd.endpoints(), service).build()) {
          for (int i = 0; i < 20; i++) {
            assertThat(client.sayHello("sidecar").getServerAddress()).isEqualTo(server.address());
          }
        }
        assertThat(server.callsServed()).isGreaterThanOrEqualTo(20);
      } finally {
        sidecar.destroy(); // SIGTERM: the sidecar revokes its lease
        assertThat(sidecar.waitFor(30, TimeUnit.SECONDS)).isTrue();
      }
      await().atMost(Duration.ofSeconds(10)).until(() -> store.get(service, server.address()).isEmpty());
    }
  }
}
