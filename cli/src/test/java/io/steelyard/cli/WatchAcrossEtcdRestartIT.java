package io.steelyard.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@code watch} keeps going when etcd goes away and comes back, and misses nothing. */
@Timeout(90)
class WatchAcrossEtcdRestartIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private static Client client;
  private static Keyspace keys;

  @BeforeAll
  static void connect() {
    client = Client.builder().endpoints(etcd.endpoints()).build();
    keys = new Keyspace(client);
  }

  @AfterAll
  static void disconnect() {
    client.close();
  }

  @Test
  void watchResumesAfterEtcdRestartsAndPrintsChangesMadeMeanwhile() {
    keys.put("/services/restart/10.0.0.7:50051", "10.0.0.7:50051|5");
    Cli.Running watch = Cli.withEndpoints(etcd.endpoints()).start("watch", "restart", "--count", "2");
    await().atMost(Duration.ofSeconds(10)).until(() -> watch.err().contains("watching "));

    etcd.member(0).stop();
    etcd.member(0).start();
    keys.put("/services/restart/10.0.0.7:50051", "10.0.0.7:50051|7");
    keys.put("/services/restart/10.0.0.8:50051", "10.0.0.8:50051|1");
    Cli.Result r = watch.result(Duration.ofSeconds(45));

    assertThat(r.exitCode()).as(r.toString()).isZero();
    assertThat(r.out().lines().toList())
        .containsExactly(
            "present 10.0.0.7:50051 weight=5",
            "weight 10.0.0.7:50051 5 -> 7",
            "added 10.0.0.8:50051 weight=1");
  }

  @Test
  void watchListsAgainWhenItCannotResumeAfterACompactionAndMissesNothing() throws Exception {
    keys.put("/services/compacted/10.0.0.7:50051", "10.0.0.7:50051|5");
    keys.put("/services/compacted/10.0.0.9:50051", "10.0.0.9:50051|2");
    int etcdPort = java.net.URI.create(etcd.endpoints()).getPort();
    try (TcpProxy proxy = new TcpProxy(etcdPort)) {
      Cli.Running watch = Cli.withEndpoints(proxy.endpoint()).start("watch", "compacted", "--count", "3");
      await().atMost(Duration.ofSeconds(10)).until(() -> watch.err().contains("watching "));

      // While the CLI cannot reach etcd: changes, then a compaction past the revision the
      // watch would resume from, so etcd refuses to resume it.
      proxy.cut();
      keys.put("/services/compacted/10.0.0.7:50051", "10.0.0.7:50051|7");
      keys.put("/services/compacted/10.0.0.8:50051", "10.0.0.8:50051|1");
      keys.delete("/services/compacted/10.0.0.9:50051");
      long revision = keys.snapshot().revision();
      Keyspace.await(client.getKVClient().compact(revision));
      proxy.restore();
      Cli.Result r = watch.result(Duration.ofSeconds(45));

      assertThat(r.exitCode()).as(r.toString()).isZero();
      assertThat(r.out().lines().toList())
          .containsExactly(
              "present 10.0.0.7:50051 weight=5",
              "present 10.0.0.9:50051 weight=2",
              "removed 10.0.0.9:50051",
              "weight 10.0.0.7:50051 5 -> 7",
              "added 10.0.0.8:50051 weight=1");
      assertThat(r.err()).contains("listing again");
    }
  }
}
