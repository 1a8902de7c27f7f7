package io.steelyard.it.faults;

import static io.steelyard.it.faults.Fleet.UNPINNED;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.EtcdMember;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An etcd member dies (SIGKILL) under live weighted load: the leader, a follower, and the member
 * every client and every agent is connected to. The two others keep a quorum, so a weight change
 * made during the fault must reach every client too. One cluster for the three cases: each
 * ends with every member back and healthy, and each fleet uses its own service.
 */
@Tag("faults")
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class MemberLossIT {

  @RegisterExtension
  static final EtcdCluster etcd =
      EtcdCluster.builder().members(3).backend(EtcdCluster.Backend.BINARY).partitionable().build();

  @AfterEach
  void everyMemberBack() {
    etcd.undoFaults(Duration.ofSeconds(30));
  }

  @Test
  void leaderKilled() throws Exception {
    try (Fleet fleet = Fleet.start(etcd, "leader-killed", UNPINNED, UNPINNED, UNPINNED)) {
      killAndRecover(fleet, etcd.leader());
    }
  }

  @Test
  void followerKilled() throws Exception {
    try (Fleet fleet = Fleet.start(etcd, "follower-killed", UNPINNED, UNPINNED, UNPINNED)) {
      killAndRecover(fleet, etcd.member((etcd.leaderIndex() + 1) % etcd.size()));
    }
  }

  /** Every client's watch and every agent's keepalive and watch are on the member that dies. */
  @Test
  void memberEveryClientAndAgentIsConnectedToKilled() throws Exception {
    int home = (etcd.leaderIndex() + 1) % etcd.size(); // a follower: leader loss is its own case
    try (Fleet fleet = Fleet.start(etcd, "connected-member-killed", home, home, home)) {
      EtcdMember victim = etcd.member(home);
      List<EtcdMember> others = etcd.members().stream().filter(m -> m != victim).toList();
      killAndRecover(fleet, victim, () ->
          // Evidence that the streams moved: etcd counts them on the survivors now.
          await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
            assertThat(others.stream().mapToDouble(Fleet::watchStreams).sum()).isGreaterThanOrEqualTo(6);
            assertThat(others.stream().mapToDouble(Fleet::keepaliveStreams).sum()).isGreaterThanOrEqualTo(3);
          }));
    }
  }

  private static void killAndRecover(Fleet fleet, EtcdMember victim) throws Exception {
    killAndRecover(fleet, victim, () -> {});
  }

  private static void killAndRecover(Fleet fleet, EtcdMember victim, Runnable duringFault) throws Exception {
    fleet.faultStarts();
    victim.kill();
    etcd.awaitHealthy(Duration.ofSeconds(30)); // a quorum is left: its leader, then the write
    // Clients whose watch was on the victim resume on a survivor within seconds.
    long written = fleet.changeWeightDuringFault(1, 3, etcd.members().stream().filter(m -> m != victim).toList());
    fleet.awaitChangeDuringFault(1, 3, written, Duration.ofSeconds(20));
    duringFault.run();
    victim.start();
    fleet.faultEnds();
    fleet.etcdHealthy(Duration.ofSeconds(30));
    fleet.verifyRecovery(4);
  }
}
