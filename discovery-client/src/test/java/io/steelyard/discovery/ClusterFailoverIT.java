package io.steelyard.discovery;

import static io.steelyard.discovery.Etcd.compact;
import static io.steelyard.discovery.Etcd.delete;
import static io.steelyard.discovery.Etcd.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.etcd.jetcd.cluster.Member;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.EtcdMember;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The watcher against a 3-member cluster whose members are stopped, killed and restarted. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ClusterFailoverIT {

  @RegisterExtension
  static final EtcdCluster etcd =
      EtcdCluster.builder().members(3).backend(EtcdCluster.Backend.BINARY).build();

  @AfterEach
  void allMembersBack() {
    etcd.members().forEach(EtcdMember::start);
    etcd.awaitHealthy(Duration.ofSeconds(30));
  }

  private static Client clientOf(EtcdMember... members) {
    List<URI> uris = java.util.Arrays.stream(members).map(EtcdMember::clientEndpoint).toList();
    return EtcdConnection.builder().endpoints(uris).build().connect();
  }

  private static String key(String service, int port) {
    return "/services/" + service + "/127.0.0.1:" + port;
  }

  private static List<String> ports(ServiceWatcher w) {
    Snapshot s = w.current();
    return s == null ? null : s.instances().stream()
        .map(i -> i.address().substring(i.address().lastIndexOf(':') + 1)).toList();
  }

  @Test
  void compactionWhileTheWatcherIsDisconnectedEndsInARelistAndTheRightState() {
    EtcdMember only = etcd.member(0);
    try (Client others = clientOf(etcd.member(1), etcd.member(2));
        ServiceWatcher w = ServiceWatcher.builder(
                EtcdConnection.builder().endpoints(List.of(only.clientEndpoint())).build(), "compacted")
            .backoff(Duration.ofMillis(100), Duration.ofSeconds(1))
            .open(s -> {})) {
      put(others, key("compacted", 7001), "127.0.0.1:7001|1");
      await().atMost(Duration.ofSeconds(15)).until(() -> List.of("7001").equals(ports(w)));

      only.stop();
      await().atMost(Duration.ofSeconds(15)).until(() -> w.current().isStale());
      assertThat(ports(w)).containsExactly("7001"); // stale, not empty
      etcd.awaitHealthy(Duration.ofSeconds(30)); // a new leader among the others, if needed

      put(others, key("compacted", 7002), "127.0.0.1:7002|1");
      delete(others, key("compacted", 7001));
      long last = put(others, key("compacted", 7003), "127.0.0.1:7003|1");
      compact(others, last);

      only.start();
      // Which re-list gets there depends on timing: the resumed watch finds its revision
      // compacted, or (calls fail at once while the member is down, see EtcdConnection) the
      // watcher gave up resuming after RELIST_AFTER_WATCH_FAILURES and lists afresh. Either way
      // the state is right, and the compaction path itself is PrefixWatcherTest's.
      await().atMost(Duration.ofSeconds(30))
          .until(() -> List.of("7002", "7003").equals(ports(w)) && !w.current().isStale());
    }
  }

  @Test
  void killingTheMemberTheWatchIsOnKeepsUpdatesFlowing() throws Exception {
    try (Client writer = EtcdConnection.of(etcd.endpoints()).connect();
        ServiceWatcher w = ServiceWatcher.builder(EtcdConnection.of(etcd.endpoints()), "failover")
            .backoff(Duration.ofMillis(100), Duration.ofSeconds(1))
            .open(s -> {})) {
      put(writer, key("failover", 7001), "127.0.0.1:7001|1");
      await().atMost(Duration.ofSeconds(15))
          .until(() -> List.of("7001").equals(ports(w)) && w.watcher().memberId() != 0);
      long watchedMember = w.watcher().memberId();
      EtcdMember victim = memberWithId(writer, watchedMember);

      victim.kill();
      etcd.awaitHealthy(Duration.ofSeconds(30)); // the victim may have been the leader
      EtcdMember survivor = etcd.members().stream().filter(m -> m != victim).findFirst().orElseThrow();
      try (Client other = clientOf(survivor)) {
        put(other, key("failover", 7002), "127.0.0.1:7002|1");
        await().atMost(Duration.ofSeconds(20)).until(() -> List.of("7001", "7002").equals(ports(w)));
        put(other, key("failover", 7003), "127.0.0.1:7003|1");
        await().atMost(Duration.ofSeconds(10)).until(() -> List.of("7001", "7002", "7003").equals(ports(w)));
      }
      assertThat(w.watcher().memberId()).isNotEqualTo(watchedMember);
    }
  }

  private static EtcdMember memberWithId(Client c, long id) throws Exception {
    for (Member m : c.getClusterClient().listMember().get(10, TimeUnit.SECONDS).getMembers()) {
      if (m.getId() == id) {
        return etcd.members().stream().filter(em -> em.name().equals(m.getName())).findFirst()
            .orElseThrow(() -> new AssertionError("no testkit member named " + m.getName()));
      }
    }
    throw new AssertionError("no member with id " + Long.toUnsignedString(id));
  }
}
