package io.steelyard.testkit;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.LeaseOption;
import io.etcd.jetcd.options.PutOption;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** snapshot/restore on a real 3-member cluster: the data and the revision go back in time. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SnapshotRestoreTest {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().members(3).backend(EtcdCluster.Backend.BINARY).build();

  @TempDir Path dir;

  @Test
  void restoredClusterHoldsTheSnapshotsKeysLeasesAndRevision() throws Exception {
    Path file = dir.resolve("etcd.db");
    long lease;
    long revisionBeforeRestore;
    try (Client client = client()) {
      lease = client.getLeaseClient().grant(60).get(10, TimeUnit.SECONDS).getID();
      client.getKVClient().put(bytes("a"), bytes("1"), PutOption.builder().withLeaseId(lease).build())
          .get(10, TimeUnit.SECONDS);

      long snapshotRevision = etcd.snapshot(file);

      assertThat(file).isRegularFile();
      client.getKVClient().put(bytes("a"), bytes("2")).get(10, TimeUnit.SECONDS);
      revisionBeforeRestore =
          client.getKVClient().put(bytes("b"), bytes("1")).get(10, TimeUnit.SECONDS).getHeader().getRevision();
      assertThat(revisionBeforeRestore).isGreaterThan(snapshotRevision);

      etcd.restore(file);

      GetResponse a = getEventually(client, "a");
      assertThat(a.getKvs().get(0).getValue()).isEqualTo(bytes("1"));
      assertThat(a.getKvs().get(0).getLease()).isEqualTo(lease);
      assertThat(a.getHeader().getRevision()).as("the revision went back").isEqualTo(snapshotRevision);
      assertThat(client.getKVClient().get(bytes("b")).get(10, TimeUnit.SECONDS).getKvs()).isEmpty();
      assertThat(client.getLeaseClient().timeToLive(lease, LeaseOption.DEFAULT).get(10, TimeUnit.SECONDS).getTTL())
          .as("the snapshot's lease is live again")
          .isPositive();
      assertThat(client.getKVClient().put(bytes("c"), bytes("1")).get(10, TimeUnit.SECONDS).getHeader().getRevision())
          .isEqualTo(snapshotRevision + 1);
    }
  }

  @Test
  void aFileThatIsNoSnapshotIsRefusedBeforeAnythingStops() throws Exception {
    Path junk = Files.writeString(dir.resolve("junk.db"), "not a snapshot");
    assertThatThrownBy(() -> etcd.restore(junk)).isInstanceOf(IllegalStateException.class).hasMessageContaining("snapshot status");
    assertThat(etcd.members()).allMatch(EtcdMember::isRunning);
  }

  private static GetResponse getEventually(Client client, String key) {
    GetResponse[] out = new GetResponse[1];
    Awaitility.await().atMost(Duration.ofSeconds(20)).ignoreExceptions().untilAsserted(() ->
        out[0] = client.getKVClient().get(bytes(key)).get(2, TimeUnit.SECONDS));
    return out[0];
  }

  private static Client client() {
    return Client.builder().endpoints(etcd.clientEndpoints().toArray(URI[]::new)).build();
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, UTF_8);
  }
}
