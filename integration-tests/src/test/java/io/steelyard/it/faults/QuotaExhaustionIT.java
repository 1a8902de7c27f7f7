package io.steelyard.it.faults;

import static io.steelyard.it.faults.Fleet.UNPINNED;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.admin.InstanceStore;
import io.steelyard.registry.admin.InstanceWrite;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * etcd's backend quota is exhausted (NOSPACE alarm) for 20 s, then an operator frees space the
 * documented way (compact, defragment, disarm). NOSPACE refuses writes and lease grants but not
 * reads, watches or keepalives, so registrations and clients ride it out; a write is refused
 * with etcd's reason, at once.
 */
@Tag("faults")
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class QuotaExhaustionIT {

  static final Duration NOSPACE = Duration.ofSeconds(20);

  @RegisterExtension
  static final EtcdCluster etcd =
      EtcdCluster.builder().members(3).backend(EtcdCluster.Backend.BINARY).partitionable()
          .quotaBackendBytes(8L << 20).build();

  @Test
  void quotaExhaustedForTwentySecondsThenFreed() throws Exception {
    try (Fleet fleet = Fleet.start(etcd, "nospace", UNPINNED, UNPINNED, UNPINNED)) {
      fleet.faultStarts();
      etcd.fillQuota();
      assertThat(etcd.alarms()).contains("NOSPACE");

      InstanceStore store = new InstanceStore(fleet.truth(), KeyLayout.defaults(), Duration.ofSeconds(5));
      long t0 = System.nanoTime();
      assertThatThrownBy(() -> store.apply(InstanceWrite.setWeight(fleet.service(), fleet.server(1).address(), 3)))
          .as("an operator's weight change while NOSPACE")
          .hasMessageContaining("database space exceeded");
      fleet.figure("write-refused-after-ms", Fleet.millis(System.nanoTime() - t0));

      Faults.holdUntil(fleet.faultNanos(), NOSPACE);
      assertThat(etcd.alarms()).as("still full at the end of the hold").contains("NOSPACE");
      etcd.freeQuota();
      fleet.faultEnds();
      fleet.etcdHealthy(Duration.ofSeconds(30));
      fleet.verifyRecovery(4);
    }
  }
}
