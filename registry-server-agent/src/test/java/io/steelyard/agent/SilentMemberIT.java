package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.EtcdMember;
import io.steelyard.testkit.FaultProxy;
import io.steelyard.testkit.Partition;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The member an agent's keepalive stream is on goes silent: partitioned from everything, its
 * connections open and nothing coming back. jetcd would keep the stream there until gRPC's
 * keepalive closes the connection (10 s + 5 s), long after a 5 s lease expired; the agent notices
 * the silence well inside the TTL and moves the keepalive to a fresh connection, so its key never
 * disappears and keeps its lease (docs/agent.md, "A silent member").
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SilentMemberIT {

  private static final Duration TTL = Duration.ofSeconds(5);
  /** More than two TTLs: without the move the lease would expire twice over. */
  private static final Duration PARTITION = Duration.ofSeconds(12);

  @RegisterExtension
  static final EtcdCluster etcd =
      EtcdCluster.builder().members(3).backend(EtcdCluster.Backend.BINARY).partitionable().build();

  private final List<FaultProxy> route = new ArrayList<>();

  @AfterEach
  void undo() {
    route.forEach(FaultProxy::close);
    etcd.undoFaults(Duration.ofSeconds(30));
  }

  @Test
  void theKeyOutlivesAPartitionOfTheAgentsMember() throws Exception {
    int leader = etcd.leaderIndex();
    int home = (leader + 1) % 3; // a follower: the cluster keeps its leader and its quorum
    EtcdMember cut = etcd.member(home);
    List<RegistrationState> seen = new CopyOnWriteArrayList<>();
    List<EtcdMember> others = new ArrayList<>(etcd.members());
    others.remove(cut);

    // The agent reaches etcd through proxies of its own; while only `home` passes, every stream
    // it opens (keepalive, watch) lands there, which etcd's own counters confirm.
    for (EtcdMember m : etcd.members()) {
      URI uri = m.clientEndpoint();
      route.add(FaultProxy.start("agent-" + m.name(), new InetSocketAddress(uri.getHost(), uri.getPort())));
    }
    for (int i = 0; i < route.size(); i++) {
      if (i != home) {
        route.get(i).blackhole();
      }
    }
    double keepalivesBefore = keepaliveStreams(cut);
    String endpoints = route.stream().map(p -> p.uri("http").toString()).collect(Collectors.joining(","));
    try (ServiceRegistration reg =
            ServiceRegistration.builder(EtcdConnection.of(endpoints), "silent", "127.0.0.1:43001")
                .ttl(TTL)
                .weight(4)
                .listener(seen::add)
                .build();
        Client probe =
            Client.builder().endpoints(others.stream().map(EtcdMember::clientEndpoint).toArray(URI[]::new)).build()) {
      reg.start().get(30, TimeUnit.SECONDS);
      await().atMost(Duration.ofSeconds(20)).until(() -> keepaliveStreams(cut) >= keepalivesBefore + 1);
      route.forEach(FaultProxy::pass);
      long lease = reg.leaseId();
      long revision =
          probe.getKVClient().get(EtcdProbe.bytes(reg.key())).get(10, TimeUnit.SECONDS).getHeader().getRevision();
      List<WatchEvent> changes = new CopyOnWriteArrayList<>();
      try (Watch.Watcher w =
          probe.getWatchClient()
              .watch(
                  EtcdProbe.bytes(reg.key()),
                  WatchOption.builder().withRevision(revision + 1).build(),
                  r -> changes.addAll(r.getEvents()))) {

        cut.partition(Partition.FROM_EVERYTHING);
        // Read through the two healthy members: the key is there the whole time, with its lease.
        await().during(PARTITION).atMost(PARTITION.plusSeconds(10)).pollInterval(Duration.ofMillis(200))
            .until(() -> leaseOf(probe, reg.key()) == lease);
        cut.heal();
        // Whatever the silent member held is delivered now: nothing of it may remove the key.
        await().during(Duration.ofSeconds(6)).atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(200))
            .until(() -> leaseOf(probe, reg.key()) == lease);

        assertThat(changes).extracting(WatchEvent::getEventType).doesNotContain(WatchEvent.EventType.DELETE);
        assertThat(seen).containsExactly(RegistrationState.REGISTERING, RegistrationState.REGISTERED);
        assertThat(reg.leaseId()).isEqualTo(lease);
        assertThat(new String(probe.getKVClient().get(EtcdProbe.bytes(reg.key())).get(10, TimeUnit.SECONDS)
                .getKvs().get(0).getValue().getBytes(), java.nio.charset.StandardCharsets.UTF_8))
            .isEqualTo("127.0.0.1:43001|4");
      }
    }
  }

  /** The key's lease as the healthy members see it, 0 when absent or when they do not answer. */
  private static long leaseOf(Client probe, String key) {
    try {
      var kvs = probe.getKVClient().get(EtcdProbe.bytes(key)).get(2, TimeUnit.SECONDS).getKvs();
      return kvs.isEmpty() ? 0 : kvs.get(0).getLease();
    } catch (Exception e) {
      return 0;
    }
  }

  private static double keepaliveStreams(EtcdMember m) {
    return m.metric("grpc_server_started_total", "grpc_method", "LeaseKeepAlive")
        - m.metric("grpc_server_handled_total", "grpc_method", "LeaseKeepAlive");
  }
}
