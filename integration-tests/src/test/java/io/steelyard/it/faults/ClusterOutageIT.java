package io.steelyard.it.faults;

import static io.steelyard.it.faults.Fleet.UNPINNED;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.EtcdMember;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The whole cluster is down (every member SIGKILLed) for 60 s, twelve times the lease TTL, then
 * back. The figures in docs/agent.md and docs/discovery.md about long outages come from here.
 * The only case that lasts a minute; it runs once.
 */
@Tag("faults")
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class ClusterOutageIT {

  static final Duration OUTAGE = Duration.ofSeconds(60);

  @RegisterExtension
  static final EtcdCluster etcd =
      EtcdCluster.builder().members(3).backend(EtcdCluster.Backend.BINARY).partitionable().build();

  @Test
  void wholeClusterDownForSixtySeconds() throws Exception {
    try (Fleet fleet = Fleet.start(etcd, "cluster-down", UNPINNED, UNPINNED, UNPINNED)) {
      fleet.faultStarts();
      etcd.members().forEach(EtcdMember::kill);
      // Every client notices and keeps its last view (stale), calls keep flowing to the servers.
      await().atMost(Duration.ofSeconds(20)).until(() -> fleet.views().stream().allMatch(ViewRecorder::stale));
      fleet.figure("flagged-stale-after-ms", Fleet.millis(
          fleet.views().stream().mapToLong(v -> v.firstStaleAtOrAfter(fleet.faultNanos())).max().orElseThrow()
              - fleet.faultNanos()));
      Faults.holdUntil(fleet.faultNanos(), OUTAGE);
      assertThat(fleet.views()).allSatisfy(v -> assertThat(v.weights()).hasSize(3));

      etcd.members().forEach(EtcdMember::start);
      fleet.faultEnds();
      fleet.etcdHealthy(Duration.ofSeconds(60));
      fleet.verifyRecovery(4);
    }
  }
}
