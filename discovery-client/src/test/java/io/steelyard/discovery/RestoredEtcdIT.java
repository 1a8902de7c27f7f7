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
 * etcd is behind it, re-list, and see the changes made after the restore; and when the restored
 * etcd has already written past the watcher's revision before the watcher resumes (revision,
 * member and raft term then all look right), it must notice that etcd's keys at its revision are
 * not its own.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
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
      Path file = dir.resolve("etcd.db");
      long ahead = snapshotThenMoveAhead(writer, w, "restored", file);

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

  @Test
  void watcherRelistsWhenTheRestoredEtcdPassedItsRevisionBeforeItResumed() throws Exception {
    // A long backoff holds the watcher off while etcd is restored and written past its revision.
    Duration backoff = Duration.ofSeconds(20); // ±25 %: the first retry comes 15 s at the earliest
    try (Client writer = EtcdConnection.of(etcd.endpoints()).connect();
        ServiceWatcher w = ServiceWatcher.builder(EtcdConnection.of(etcd.endpoints()), "caught-up")
            .backoff(backoff, backoff)
            .open(s -> {})) {
      Path file = dir.resolve("etcd.db");
      long ahead = snapshotThenMoveAhead(writer, w, "caught-up", file);

      etcd.restore(file);

      // The restored etcd's own history, on the same member and (one election) the same raft
      // term: 7003 at a revision not above `ahead`, then other keys until its revision passes
      // `ahead`. A watch resumed from ahead + 1 is confirmed at a revision above ours and would
      // replay none of this.
      long after;
      try (Client fresh = EtcdConnection.of(etcd.endpoints()).connect()) {
        after = putOnceServing(fresh, "/services/caught-up/127.0.0.1:7003", "127.0.0.1:7003|3");
        long revision = after;
        for (int i = 0; revision <= ahead + 1; i++) {
          revision = putOnceServing(fresh, "/elsewhere/filler-" + i, "x");
        }
      }
      assertThat(after).isLessThanOrEqualTo(ahead);
      assertThat(w.current().isStale()).as("the watcher has not resumed yet").isTrue();
      assertThat(w.current().revision()).isEqualTo(ahead);

      await().atMost(Duration.ofSeconds(45)).until(() ->
          Map.of("127.0.0.1:7001", 1, "127.0.0.1:7003", 3).equals(weights(w)) && !w.current().isStale());
    }
  }

  /**
   * Registers 7001|1 for {@code service}, snapshots etcd to {@code file}, then makes changes the
   * restore undoes (7001|9, 7002|1); returns the revision the watcher then holds.
   */
  private static long snapshotThenMoveAhead(Client writer, ServiceWatcher w, String service, Path file) {
    String keys = "/services/" + service + "/";
    put(writer, keys + "127.0.0.1:7001", "127.0.0.1:7001|1");
    await().atMost(Duration.ofSeconds(15)).until(() -> Map.of("127.0.0.1:7001", 1).equals(weights(w)));
    etcd.snapshot(file);
    put(writer, keys + "127.0.0.1:7001", "127.0.0.1:7001|9");
    long ahead = put(writer, keys + "127.0.0.1:7002", "127.0.0.1:7002|1");
    await().atMost(Duration.ofSeconds(15)).until(() -> w.current().revision() == ahead);
    assertThat(weights(w)).isEqualTo(Map.of("127.0.0.1:7001", 9, "127.0.0.1:7002", 1));
    return ahead;
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
