package io.steelyard.it.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.EtcdMember;
import io.steelyard.testkit.Partition;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A member that is alive but useless: frozen (SIGSTOP) or cut off by a partition. These faults do
 * not announce themselves: connections stay open and nothing comes back. Each case pins client i
 * and agent i to a member it names. One cluster for the three cases; each ends with every member
 * resumed, healed and healthy.
 */
@Tag("faults")
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class FreezeAndPartitionIT {

  /** Longer than the election timeout (1 s) three times over, shorter than the lease TTL (5 s). */
  private static final Duration FREEZE = Duration.ofSeconds(3);

  @RegisterExtension
  static final EtcdCluster etcd =
      EtcdCluster.builder().members(3).backend(EtcdCluster.Backend.BINARY).partitionable().build();

  @AfterEach
  void everyMemberBack() {
    for (EtcdMember m : etcd.members()) {
      m.resume();
      m.heal();
      m.start();
    }
    etcd.awaitHealthy(Duration.ofSeconds(30));
  }

  /** Client 0 and agent 0 are on the leader, the others on the followers. */
  @Test
  void leaderFrozenLongerThanTheElectionTimeout() throws Exception {
    int leader = etcd.leaderIndex();
    try (Fleet fleet = Fleet.start(etcd, "leader-frozen", leader, (leader + 1) % 3, (leader + 2) % 3)) {
      EtcdMember frozen = etcd.member(leader);
      fleet.faultStarts();
      frozen.freeze();
      // Written to the other two, which elect a leader among themselves meanwhile.
      CompletableFuture<Long> written = fleet.changeWeightDuringFaultAsync(1, 3, othersThan(frozen));
      Faults.holdUntil(fleet.faultNanos(), FREEZE); // the fault is the point: it lasts FREEZE, whatever happens
      frozen.resume();
      fleet.faultEnds();
      // Client 0's watch is on the frozen member: it sees the change once that member runs again.
      fleet.awaitChangeDuringFault(1, 3, written.get(30, TimeUnit.SECONDS), Duration.ofSeconds(20));
      fleet.etcdHealthy(Duration.ofSeconds(30));
      fleet.verifyRecovery(4);
    }
  }

  /**
   * Client 0 and agent 0 are on the leader when it is cut off from the other two (clients still
   * reach it). The docs' claim: the watch uses require-leader, so a partitioned member cannot
   * stall it. Here: a change written to the majority reaches client 0 while the partition holds.
   */
  @Test
  void leaderPartitionedFromTheOtherTwo() throws Exception {
    int leader = etcd.leaderIndex();
    try (Fleet fleet = Fleet.start(etcd, "leader-partitioned", leader, (leader + 1) % 3, (leader + 2) % 3)) {
      EtcdMember cut = etcd.member(leader);
      fleet.faultStarts();
      cut.partition(Partition.FROM_PEERS);
      long written = fleet.changeWeightDuringFault(1, 3, othersThan(cut));
      Map<String, Duration> delays = fleet.awaitChangeDuringFault(1, 3, written, Duration.ofSeconds(30));
      assertThat(cut.partitioned()).as("still partitioned when every client had the change").isPresent();
      assertThat(delays).hasSize(3);
      cut.heal();
      fleet.faultEnds();
      fleet.etcdHealthy(Duration.ofSeconds(30));
      fleet.verifyRecovery(4);
    }
  }

  /**
   * Client 0 and agent 0 are on a follower that goes silent for everyone, clients included: no
   * error, no leader change, just nothing. Only the gRPC keepalive under jetcd (10 s, then 5 s
   * for the answer) notices, so client 0 gets a change made meanwhile late, but before the heal.
   */
  @Test
  void oneClientsMemberPartitionedFromEverything() throws Exception {
    int leader = etcd.leaderIndex();
    int follower = (leader + 1) % 3;
    try (Fleet fleet = Fleet.start(etcd, "member-silent", follower, (leader + 2) % 3, leader)) {
      EtcdMember cut = etcd.member(follower);
      fleet.faultStarts();
      cut.partition(Partition.FROM_EVERYTHING);
      long written = fleet.changeWeightDuringFault(1, 3, othersThan(cut));
      fleet.awaitChangeDuringFault(1, 3, written, Duration.ofSeconds(40));
      assertThat(cut.partitioned()).as("still partitioned when every client had the change").isPresent();
      cut.heal();
      fleet.faultEnds();
      fleet.etcdHealthy(Duration.ofSeconds(30));
      fleet.verifyRecovery(4);
    }
  }

  private static List<EtcdMember> othersThan(EtcdMember m) {
    return etcd.members().stream().filter(o -> o != m).toList();
  }
}
