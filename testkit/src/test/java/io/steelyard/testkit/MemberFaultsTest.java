package io.steelyard.testkit;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.WatchOption;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** freeze/resume, partition/heal and metrics on a real 3-member cluster behind fault proxies. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class MemberFaultsTest {

  @RegisterExtension
  static final EtcdCluster etcd =
      EtcdCluster.builder().members(3).backend(EtcdCluster.Backend.BINARY).partitionable().build();

  @AfterEach
  void everyMemberBack() {
    etcd.undoFaults(Duration.ofSeconds(30));
  }

  @Test
  void frozenLeaderIsReplacedAndCatchesUpAfterResume() throws Exception {
    int old = etcd.leaderIndex();
    EtcdMember frozen = etcd.member(old);

    frozen.freeze();

    assertThat(frozen.isFrozen()).isTrue();
    assertThat(frozen.isRunning()).as("a frozen member is alive").isTrue();
    // A member just frozen was seen to answer one more request on a loaded machine: /proc shows
    // the process stopped once its first thread is, and the others stop as they next run.
    Awaitility.await("a frozen member answers nothing").atMost(Duration.ofSeconds(10))
        .until(() -> !EtcdHttp.answers(frozen.clientEndpoint()));
    try (Client others = clientOf(othersThan(frozen))) {
      Awaitility.await().atMost(Duration.ofSeconds(20)).ignoreExceptions()
          .untilAsserted(() -> others.getKVClient().put(bytes("while-frozen"), bytes("1")).get(2, TimeUnit.SECONDS));
    }

    frozen.resume();

    assertThat(frozen.isFrozen()).isFalse();
    etcd.awaitHealthy(Duration.ofSeconds(30));
    assertThat(etcd.leaderIndex()).as("the leader elected meanwhile keeps its role").isNotEqualTo(old);
    assertSeesLocally(frozen, "while-frozen");
  }

  @Test
  void memberPartitionedFromPeersStillTakesClientsButSeesNothingNew() throws Exception {
    EtcdMember cut = aFollower();

    cut.partition(Partition.FROM_PEERS);

    assertThat(cut.partitioned()).contains(Partition.FROM_PEERS);
    try (Client others = clientOf(othersThan(cut))) {
      Awaitility.await().atMost(Duration.ofSeconds(20)).ignoreExceptions()
          .untilAsserted(() -> others.getKVClient().put(bytes("while-cut"), bytes("1")).get(2, TimeUnit.SECONDS));
      // Lease renewals through a follower are forwarded to the leader over a peer connection that
      // names no sender: the proxy must still recognise the partitioned member as the dialer.
      long lease = others.getLeaseClient().grant(30).get(5, TimeUnit.SECONDS).getID();
      try (Client onlyCut = clientOf(List.of(cut))) {
        assertThatThrownBy(() -> onlyCut.getLeaseClient().keepAliveOnce(lease).get(8, TimeUnit.SECONDS))
            .as("a keepalive through the partitioned member")
            .isNotNull();
      }
    }
    assertThat(EtcdHttp.answers(cut.clientEndpoint())).as("clients still reach it").isTrue();
    Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> knowsNoLeader(cut));
    assertThat(serializableGet(cut, "while-cut")).as("it does not see the majority's writes").isFalse();

    cut.heal();

    etcd.awaitHealthy(Duration.ofSeconds(30));
    assertSeesLocally(cut, "while-cut");
  }

  @Test
  void leaderPartitionedFromPeersIsReplacedByTheMajority() throws Exception {
    EtcdMember old = etcd.leader();

    old.partition(Partition.FROM_PEERS);

    // It steps down after an election timeout without a quorum (etcd's check-quorum), and the
    // other two elect a leader among themselves.
    Awaitility.await().atMost(Duration.ofSeconds(20)).until(() ->
        othersThan(old).stream().anyMatch(m -> EtcdHttp.status(m.clientEndpoint()).map(EtcdHttp.Status::isLeader).orElse(false))
            && knowsNoLeader(old));
    try (Client others = clientOf(othersThan(old))) {
      Awaitility.await().atMost(Duration.ofSeconds(10)).ignoreExceptions()
          .untilAsserted(() -> others.getKVClient().put(bytes("new-leader"), bytes("1")).get(2, TimeUnit.SECONDS));
    }

    old.heal();

    etcd.awaitHealthy(Duration.ofSeconds(30));
    assertSeesLocally(old, "new-leader");
  }

  @Test
  void memberPartitionedFromEverythingKeepsClientConnectionsOpenAndSilent() throws Exception {
    EtcdMember cut = aFollower();
    try (Client onlyCut = clientOf(List.of(cut))) {
      onlyCut.getKVClient().put(bytes("before"), bytes("1")).get(10, TimeUnit.SECONDS);

      cut.partition(Partition.FROM_EVERYTHING);

      assertThatThrownBy(() -> onlyCut.getKVClient().get(bytes("before")).get(3, TimeUnit.SECONDS))
          .as("no refusal, no error: the call just gets no answer")
          .isInstanceOf(TimeoutException.class);
      assertThat(EtcdHttp.listening(cut.clientEndpoint())).isTrue();
      assertThat(EtcdHttp.answers(cut.clientEndpoint())).isFalse();

      cut.heal();

      Awaitility.await().atMost(Duration.ofSeconds(20)).ignoreExceptions()
          .untilAsserted(() -> onlyCut.getKVClient().get(bytes("before")).get(2, TimeUnit.SECONDS));
    }
  }

  @Test
  void metricsCountTheWatchStreamsOpenOnEachMember() throws Exception {
    EtcdMember member = etcd.member(0);
    double[] before = watchStreams();
    try (Client onlyMember = clientOf(List.of(member));
        Watch.Watcher w = onlyMember.getWatchClient().watch(bytes("w"), WatchOption.DEFAULT, r -> {})) {
      Awaitility.await().atMost(Duration.ofSeconds(10))
          .until(() -> member.metric("etcd_debugging_mvcc_watch_stream_total") == before[0] + 1);
      double[] during = watchStreams();
      assertThat(during[1]).isEqualTo(before[1]);
      assertThat(during[2]).isEqualTo(before[2]);
      assertThat(member.metric("grpc_server_started_total", "grpc_method", "Watch", "grpc_type", "bidi_stream"))
          .isGreaterThanOrEqualTo(1);
    }
  }

  /** etcd's status omits the leader (zero in proto3 JSON) and reports "no leader" when it has none. */
  private static boolean knowsNoLeader(EtcdMember m) {
    EtcdGateway.Reply r = EtcdGateway.post(m.clientEndpoint(), "/v3/maintenance/status", "{}", Duration.ofSeconds(3));
    return r.ok() && r.body().contains("etcdserver: no leader");
  }

  private static double[] watchStreams() {
    return etcd.members().stream().mapToDouble(m -> m.metric("etcd_debugging_mvcc_watch_stream_total")).toArray();
  }

  private static EtcdMember aFollower() {
    int leader = etcd.leaderIndex();
    return etcd.member((leader + 1) % etcd.size());
  }

  private static List<EtcdMember> othersThan(EtcdMember m) {
    return etcd.members().stream().filter(o -> o != m).toList();
  }

  private static Client clientOf(List<EtcdMember> members) {
    return Client.builder().endpoints(members.stream().map(EtcdMember::clientEndpoint).toArray(URI[]::new)).build();
  }

  /** A read answered from the member's own store, without asking the leader. */
  private static boolean serializableGet(EtcdMember member, String key) throws Exception {
    try (Client local = clientOf(List.of(member))) {
      return local.getKVClient()
              .get(bytes(key), GetOption.builder().withSerializable(true).build())
              .get(5, TimeUnit.SECONDS)
              .getCount()
          == 1;
    }
  }

  private static void assertSeesLocally(EtcdMember member, String key) {
    Awaitility.await().atMost(Duration.ofSeconds(15)).ignoreExceptions()
        .until(() -> serializableGet(member, key));
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, UTF_8);
  }
}
