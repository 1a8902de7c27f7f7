package io.steelyard.it.faults;

import static io.steelyard.it.faults.Fleet.PROPAGATION_BOUND;
import static io.steelyard.it.faults.Fleet.UNPINNED;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.steelyard.testkit.EtcdCluster;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Disaster recovery: the cluster is restored from a snapshot taken while the fleet was
 * registered, after a weight change and many other writes. etcd's revision goes back (3.4 has no
 * {@code --bump-revision}), so a watch resumed from the revision a client last saw would wait for
 * a revision etcd reaches only much later and miss everything until then. Clients must notice
 * and re-list: their views become the snapshot's, and later changes reach them. Agents whose
 * lease survived must notice too, and write their newer weight again.
 */
@Tag("faults")
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class RestoredFromSnapshotIT {

  /** Writes after the snapshot, so the revision clients saw is far ahead of the restored one. */
  static final int LATER_WRITES = 50;

  @RegisterExtension
  static final EtcdCluster etcd =
      EtcdCluster.builder().members(3).backend(EtcdCluster.Backend.BINARY).partitionable().build();

  @TempDir Path dir;

  @Test
  void clusterRestoredFromAnOlderSnapshot() throws Exception {
    try (Fleet fleet = Fleet.start(etcd, "restored", UNPINNED, UNPINNED, UNPINNED)) {
      Path snapshot = dir.resolve("etcd.db");
      long snapshotRevision = etcd.snapshot(snapshot);
      fleet.changeWeightAndAwait(1, 3, PROPAGATION_BOUND); // lost with the restore
      long before = 0;
      for (int i = 0; i < LATER_WRITES; i++) {
        before = fleet.truth().getKVClient()
            .put(ByteSequence.from("/elsewhere/busy", java.nio.charset.StandardCharsets.UTF_8),
                ByteSequence.from(Integer.toString(i), java.nio.charset.StandardCharsets.UTF_8))
            .get(5, TimeUnit.SECONDS).getHeader().getRevision();
      }

      fleet.faultStarts();
      etcd.restore(snapshot);
      fleet.faultEnds();
      fleet.etcdHealthy(Duration.ofSeconds(30));

      // The test's own client reconnects like any other: right after the restore its channel may
      // still be in gRPC's reconnect backoff, and jetcd's few retries of a get fail UNAVAILABLE.
      long[] read = new long[1];
      await().atMost(Duration.ofSeconds(10)).ignoreExceptions().until(() -> {
        read[0] = fleet.truth().getKVClient().get(fleet.key(fleet.server(0).address()))
            .get(5, TimeUnit.SECONDS).getHeader().getRevision();
        return true;
      });
      long after = read[0];
      assertThat(after).as("etcd's revision went back").isLessThan(before);
      fleet.figure("revision-before-restore", before);
      fleet.figure("revision-after-restore", after);
      fleet.figure("snapshot-revision", snapshotRevision);
      fleet.verifyRecovery(4);
      // Server 1's weight was changed after the snapshot, and the restore brought back the
      // snapshot's value (2). Its agent writes its own (3) again either way: re-registering if its
      // lease expired during the restore, or noticing that etcd went back in time if the lease
      // survived (docs/agent.md).
      fleet.figure("server1-weight-agent/etcd",
          fleet.server(1).weight() + "/" + fleet.etcdWeights().get(fleet.server(1).address()));
      assertThat(fleet.server(1).weight()).isEqualTo(3);
      await().atMost(PROPAGATION_BOUND).ignoreExceptions()
          .until(() -> Integer.valueOf(3).equals(fleet.etcdWeights().get(fleet.server(1).address())));
    }
  }
}
