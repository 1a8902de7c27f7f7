package io.steelyard.discovery;

import static io.steelyard.discovery.Etcd.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Micrometer is an optional dependency: run by the build's {@code without-micrometer} execution,
 * with Micrometer off the class path, a watcher lists, watches and counts a malformed value.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class WithoutMicrometerTest {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  @Test
  void aWatcherWorksWithMicrometerOffTheClassPath() {
    // Run alone (-Dtest=...) in the default execution, Micrometer is present: nothing to prove.
    assumeTrue(Boolean.getBoolean("steelyard.withoutMicrometer"), "needs the without-micrometer run");
    assertThatThrownBy(() -> Class.forName("io.micrometer.core.instrument.MeterRegistry"))
        .isInstanceOf(ClassNotFoundException.class);
    EtcdConnection connection = EtcdConnection.of(etcd.endpoints());
    try (Client client = connection.connect();
        ServiceWatcher w = ServiceWatcher.open(connection, KeyLayout.defaults(), "plain", s -> {})) {
      put(client, "/services/plain/127.0.0.1:1", "127.0.0.1:1|2");
      put(client, "/services/plain/junk", "127.0.0.1:2|-1");
      await().atMost(Duration.ofSeconds(10)).until(() -> w.current() != null
          && w.current().instances().size() == 1 && w.malformedCount() == 1);
      assertThat(w.current().instances().get(0).weight()).isEqualTo(2);
    }
  }
}
