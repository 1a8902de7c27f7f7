package io.steelyard.discovery;

import static io.steelyard.discovery.Etcd.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.testkit.EtcdCluster;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * etcd restored from an older snapshot goes back in revision (3.4 restores the snapshot's), and
 * accepts a watch from a revision it has not reached, silently. The watcher must notice that
 * etcd is behind it, re-list, and see the changes made after the restore.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class RestoredEtcdIT {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  @TempDir Path dir;

  @Test
  void watcherRelistsWhenEtcdIsRestoredToAnOlderRevision() throws Exception {
    try (Client writer = EtcdConnection.of(etcd.endpoints()).connect();
        ServiceWatcher w = ServiceWatcher.builder(EtcdConnection.of(etcd.endpoints()), "restored")
            .backoff(Duration.ofMillis(100), Duration.ofSeconds(1))
            .open(s -> {})) {
      put(writer, "/services/restored/127.0.0.1:7001", "127.0.0.1:7001|1");
      await().atMost(Duration.ofSeconds(15)).until(() -> Map.of("127.0.0.1:7001", 1).equals(weights(w)));
      Path file = dir.resolve("etcd.db");
      etcd.snapshot(file);
      // After the snapshot: a change the restore undoes, and the watcher's revision moves ahead.
      put(writer, "/services/restored/127.0.0.1:7001", "127.0.0.1:7001|9");
      long ahead = put(writer, "/services/restored/127.0.0.1:7002", "127.0.0.1:7002|1");
      await().atMost(Duration.ofSeconds(15)).until(() -> weights(w).size() == 2);
      assertThat(w.current().revision()).isEqualTo(ahead);

      etcd.restore(file);

      // What the restore brought back, and a change made after it at a revision not above `ahead`
      // (a watch resumed from ahead + 1 would miss it). A fresh client: the writer's connection
      // may still be in reconnect backoff from the restart, and a retried put could apply twice.
      long after;
      try (Client fresh = EtcdConnection.of(etcd.endpoints()).connect()) {
        after = putOnceServing(fresh, "/services/restored/127.0.0.1:7003", "127.0.0.1:7003|3");
      }
      assertThat(after).isLessThanOrEqualTo(ahead);
      await().atMost(Duration.ofSeconds(20)).until(() ->
          Map.of("127.0.0.1:7001", 1, "127.0.0.1:7003", 3).equals(weights(w)) && !w.current().isStale());
    }
  }

  /** Retries only while etcd answers nothing; the value is the same each time. */
  private static long putOnceServing(Client c, String key, String value) {
    return await("put " + key + " once etcd serves")
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(200))
        .until(() -> {
          try {
            return put(c, key, value);
          } catch (AssertionError e) { // put's bounded failure: etcd not serving yet
            return null;
          }
        }, Objects::nonNull);
  }

  private static Map<String, Integer> weights(ServiceWatcher w) {
    Snapshot s = w.current();
    return s == null ? Map.of()
        : s.instances().stream().collect(Collectors.toMap(ServiceInstance::address, ServiceInstance::weight));
  }
}
