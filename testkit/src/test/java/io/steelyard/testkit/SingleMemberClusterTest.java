package io.steelyard.testkit;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SingleMemberClusterTest {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().members(1).backend(EtcdCluster.Backend.BINARY).build();

  private Client client;

  @BeforeEach
  void connect() {
    client = Client.builder().endpoints(etcd.clientEndpoints().toArray(URI[]::new)).build();
  }

  @AfterEach
  void disconnect() {
    client.close();
  }

  @Test
  void exposesOneLoopbackEndpointAndALeader() {
    assertThat(etcd.size()).isEqualTo(1);
    assertThat(etcd.members()).hasSize(1);
    assertThat(etcd.member(0).name()).isEqualTo("etcd0");
    assertThat(etcd.clientEndpoints()).singleElement().satisfies(uri -> {
      assertThat(uri.getScheme()).isEqualTo("http");
      assertThat(uri.getHost()).isEqualTo("127.0.0.1");
    });
    assertThat(etcd.endpoints()).isEqualTo(etcd.member(0).clientEndpoint().toString());
    assertThat(etcd.leaderIndex()).isZero();
  }

  @Test
  void putThenGetThroughJetcd() throws Exception {
    KV kv = client.getKVClient();
    kv.put(bytes("greeting"), bytes("hello")).get(5, TimeUnit.SECONDS);

    assertThat(kv.get(bytes("greeting")).get(5, TimeUnit.SECONDS).getKvs())
        .singleElement()
        .satisfies(kv1 -> assertThat(kv1.getValue().toString(UTF_8)).isEqualTo("hello"));
  }

  @Test
  void dataSurvivesStopAndStart() throws Exception {
    EtcdMember member = etcd.member(0);
    URI endpoint = member.clientEndpoint();
    KV kv = client.getKVClient();
    kv.put(bytes("durable"), bytes("yes")).get(5, TimeUnit.SECONDS);

    member.stop();

    assertThat(member.isRunning()).isFalse();
    assertThat(EtcdHttp.isHealthy(endpoint)).isFalse();
    assertThatThrownBy(() -> kv.get(bytes("durable")).get(2, TimeUnit.SECONDS)).isInstanceOf(Exception.class);

    member.start();

    assertThat(member.isRunning()).isTrue();
    assertThat(member.clientEndpoint()).isEqualTo(endpoint);
    Awaitility.await()
        .atMost(Duration.ofSeconds(15))
        .ignoreExceptions()
        .untilAsserted(
            () ->
                assertThat(kv.get(bytes("durable")).get(2, TimeUnit.SECONDS).getKvs())
                    .singleElement()
                    .satisfies(kv1 -> assertThat(kv1.getValue().toString(UTF_8)).isEqualTo("yes")));
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, UTF_8);
  }
}
