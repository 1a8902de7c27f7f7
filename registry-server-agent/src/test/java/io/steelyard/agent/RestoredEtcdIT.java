package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.admin.InstanceStore;
import io.steelyard.registry.admin.InstanceWrite;
import io.steelyard.testkit.EtcdCluster;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * etcd is restored from a snapshot older than the registration's last weight while its lease
 * survives (it is in the snapshot, and the restore is shorter than the TTL): etcd's revision and
 * value go back, the lease lives on. The agent must notice (its watch would otherwise wait for a
 * revision etcd has not reached) and write its own value again, with its lease.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RestoredEtcdIT {

  /** Longer than a restore takes on a busy machine, so that the lease outlives it. */
  private static final Duration TTL = Duration.ofSeconds(30);

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  @RegisterExtension
  @Order(EtcdProbe.AFTER_THE_CLUSTER)
  static final EtcdProbe probe = EtcdProbe.of(etcd);

  @TempDir Path dir;

  @Test
  void aRegistrationWritesItsNewerWeightAgainAfterARestoreAndKeepsWatching() throws Exception {
    try (ServiceRegistration reg =
        ServiceRegistration.builder(EtcdConnection.of(etcd.endpoints()), "restored", "127.0.0.1:44001")
            .ttl(TTL)
            .weight(5)
            .build()) {
      reg.start().get(30, TimeUnit.SECONDS);
      long lease = reg.leaseId();
      etcd.snapshot(dir.resolve("etcd.db")); // the key at weight 5
      reg.setWeightAndWait(8);
      for (int i = 0; i < 20; i++) { // etcd's revision moves well past the snapshot's
        probe.client.getKVClient().put(EtcdProbe.bytes("/elsewhere/busy"), EtcdProbe.bytes("" + i))
            .get(5, TimeUnit.SECONDS);
      }
      long before =
          probe.client.getKVClient().get(EtcdProbe.bytes(reg.key())).get(5, TimeUnit.SECONDS)
              .getHeader().getRevision();

      etcd.restore(dir.resolve("etcd.db"));

      // The agent's value again, with the lease that survived, at a revision of the restored etcd.
      await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(100)).ignoreExceptions()
          .until(() -> "127.0.0.1:44001|8".equals(probe.value(reg.key())));
      assertThat(probe.lease(reg.key())).isEqualTo(lease);
      assertThat(probe.get(reg.key()).orElseThrow().getModRevision()).as("written after the restore").isLessThan(before);
      assertThat(reg.leaseId()).isEqualTo(lease);
      assertThat(reg.state()).isEqualTo(RegistrationState.REGISTERED);

      // The watch follows the restored etcd, not a revision it has not reached: an operator's
      // change now reaches the agent.
      new InstanceStore(probe.client, KeyLayout.defaults(), Duration.ofSeconds(5))
          .apply(InstanceWrite.setWeight("restored", "127.0.0.1:44001", 3));
      await().atMost(Duration.ofSeconds(10)).until(reg::weight, w -> w == 3);
    }
  }
}
