package io.steelyard.discovery;

import static io.steelyard.discovery.Etcd.compact;
import static io.steelyard.discovery.Etcd.delete;
import static io.steelyard.discovery.Etcd.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@link ServiceNameWatcher} against a real etcd: listing, watching, outages and compaction. */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ServiceNameWatcherIT {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  @AfterEach
  void startEtcdAgain() {
    etcd.member(0).start();
  }

  @Test
  void listsThenFollowsTheServicesUnderItsOwnPrefixOnly() throws Exception {
    KeyLayout layout = KeyLayout.of("/names-" + System.nanoTime());
    List<Set<String>> seen = new CopyOnWriteArrayList<>();
    try (Client writer = EtcdConnection.of(etcd.endpoints()).connect()) {
      put(writer, layout.instanceKey("greeter", "127.0.0.1:7001"), "127.0.0.1:7001|1");
      put(writer, layout.drainNoteKey("greeter", "127.0.0.1:7001"), "1");
      put(writer, layout.serviceConfigKey("orders"), "{}");
      put(writer, layout.prefix() + "/greeter", "not an instance key");
      put(writer, layout.prefix() + "2/other/127.0.0.1:7009", "127.0.0.1:7009|1");
      try (ServiceNameWatcher names = ServiceNameWatcher.builder(EtcdConnection.of(etcd.endpoints()))
          .layout(layout)
          .open(seen::add)) {
        assertThat(names.awaitFirstListing(Duration.ofSeconds(20))).isTrue();
        assertThat(names.names()).containsExactly("greeter");
        assertThat(names.malformedCount()).isEqualTo(1);

        put(writer, layout.instanceKey("orders", "127.0.0.1:7002"), "127.0.0.1:7002|1");
        await().atMost(Duration.ofSeconds(20))
            .until(() -> names.names().equals(Set.of("greeter", "orders")));

        delete(writer, layout.instanceKey("greeter", "127.0.0.1:7001"));
        await().atMost(Duration.ofSeconds(20)).until(() -> names.names().equals(Set.of("orders")));
        put(writer, layout.prefix() + "/bad name/x", "x");
        await().atMost(Duration.ofSeconds(20)).until(() -> names.malformedCount() == 2);
      }
    }
    assertThat(seen).containsExactly(Set.of("greeter"), Set.of("greeter", "orders"), Set.of("orders"));
  }

  @Test
  void servesTheLastNamesWhileEtcdIsDownAndCatchesUpAfter() throws Exception {
    KeyLayout layout = KeyLayout.of("/outage-" + System.nanoTime());
    try (Client writer = EtcdConnection.of(etcd.endpoints()).connect()) {
      put(writer, layout.instanceKey("greeter", "127.0.0.1:7001"), "127.0.0.1:7001|1");
    }
    try (ServiceNameWatcher names = ServiceNameWatcher.builder(EtcdConnection.of(etcd.endpoints()))
        .layout(layout)
        .backoff(Duration.ofMillis(100), Duration.ofSeconds(1))
        .open(n -> {})) {
      assertThat(names.awaitFirstListing(Duration.ofSeconds(20))).isTrue();

      etcd.member(0).stop();
      await().atMost(Duration.ofSeconds(30)).until(names::isStale);
      assertThat(names.names()).containsExactly("greeter");

      etcd.member(0).start();
      try (Client fresh = EtcdConnection.of(etcd.endpoints()).connect()) {
        put(fresh, layout.instanceKey("orders", "127.0.0.1:7002"), "127.0.0.1:7002|1");
      }
      await().atMost(Duration.ofSeconds(40))
          .until(() -> !names.isStale() && names.names().equals(Set.of("greeter", "orders")));
    }
  }

  @Test
  void listsAgainWhenTheRevisionToResumeFromWasCompacted() throws Exception {
    KeyLayout layout = KeyLayout.of("/compacted-" + System.nanoTime());
    try (Client writer = EtcdConnection.of(etcd.endpoints()).connect()) {
      put(writer, layout.instanceKey("greeter", "127.0.0.1:7001"), "127.0.0.1:7001|1");
      put(writer, layout.instanceKey("orders", "127.0.0.1:7002"), "127.0.0.1:7002|1");
    }
    // A long backoff holds the watcher off while etcd restarts and compacts past its revision.
    Duration backoff = Duration.ofSeconds(20); // ±25 %: the first retry comes 15 s at the earliest
    try (ServiceNameWatcher names = ServiceNameWatcher.builder(EtcdConnection.of(etcd.endpoints()))
        .layout(layout)
        .backoff(backoff, backoff)
        .open(n -> {})) {
      assertThat(names.awaitFirstListing(Duration.ofSeconds(20))).isTrue();
      etcd.member(0).stop();
      await().atMost(Duration.ofSeconds(30)).until(names::isStale);

      etcd.member(0).start();
      try (Client fresh = EtcdConnection.of(etcd.endpoints()).connect()) {
        delete(fresh, layout.instanceKey("orders", "127.0.0.1:7002"));
        long now = put(fresh, layout.instanceKey("billing", "127.0.0.1:7003"), "127.0.0.1:7003|1");
        compact(fresh, now);
      }
      await().atMost(Duration.ofSeconds(60))
          .until(() -> !names.isStale() && names.names().equals(Set.of("greeter", "billing")));
    }
  }
}
