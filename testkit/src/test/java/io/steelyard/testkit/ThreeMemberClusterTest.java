package io.steelyard.testkit;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.options.GetOption;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

@Timeout(value = 90, unit = TimeUnit.SECONDS)
class ThreeMemberClusterTest {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().members(3).backend(EtcdCluster.Backend.BINARY).build();

  @Test
  void membersHaveDistinctNamesAndLoopbackEndpoints() {
    assertThat(etcd.members()).extracting(EtcdMember::name).containsExactly("etcd0", "etcd1", "etcd2");
    assertThat(etcd.clientEndpoints()).doesNotHaveDuplicates().allSatisfy(uri -> assertThat(uri.getHost()).isEqualTo("127.0.0.1"));
    assertThat(etcd.endpoints().split(",")).hasSize(3);
  }

  @Test
  void killedLeaderIsReplacedAndRejoinsAfterRestart() throws Exception {
    int oldLeader = etcd.leaderIndex();
    EtcdMember killed = etcd.member(oldLeader);

    killed.kill();

    assertThat(killed.isRunning()).isFalse();
    Awaitility.await()
        .atMost(Duration.ofSeconds(15))
        .untilAsserted(() -> assertThat(etcd.leaderIndex()).isNotEqualTo(oldLeader));
    try (Client client = Client.builder().endpoints(etcd.clientEndpoints().toArray(URI[]::new)).build()) {
      Awaitility.await()
          .atMost(Duration.ofSeconds(15))
          .ignoreExceptions()
          .untilAsserted(() -> client.getKVClient().put(bytes("while-down"), bytes("written")).get(2, TimeUnit.SECONDS));
    }

    killed.start();

    assertThat(killed.isRunning()).isTrue();
    etcd.awaitHealthy(Duration.ofSeconds(15));
    // A serializable read answers from the member's own store: it caught up with the cluster.
    try (Client local = Client.builder().endpoints(killed.clientEndpoint()).build()) {
      KV kv = local.getKVClient();
      Awaitility.await()
          .atMost(Duration.ofSeconds(15))
          .ignoreExceptions()
          .untilAsserted(
              () ->
                  assertThat(
                          kv.get(bytes("while-down"), GetOption.builder().withSerializable(true).build())
                              .get(2, TimeUnit.SECONDS)
                              .getKvs())
                      .singleElement()
                      .satisfies(v -> assertThat(v.getValue().toString(UTF_8)).isEqualTo("written")));
    }
  }

  @Test
  void memberStartedWithoutQuorumReturnsOnceItListensAndTheClusterHealsWhenOthersReturn() {
    int leader = etcd.leaderIndex();
    EtcdMember first = etcd.member((leader + 1) % 3);
    EtcdMember second = etcd.member((leader + 2) % 3);
    etcd.member(leader).kill();
    first.kill();

    second.restart(); // alone among three: it listens but cannot serve until a quorum is back

    assertThat(second.isRunning()).isTrue();
    assertThat(EtcdHttp.listening(second.clientEndpoint())).isTrue();
    assertThat(EtcdHttp.isHealthy(second.clientEndpoint())).isFalse();

    first.start();
    etcd.member(leader).start();

    etcd.awaitHealthy(Duration.ofSeconds(15));
    assertThat(etcd.members()).allMatch(EtcdMember::isRunning);
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, UTF_8);
  }
}
