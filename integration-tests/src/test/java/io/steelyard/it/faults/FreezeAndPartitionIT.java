package io.steelyard.it.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.steelyard.it.Cli;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.EtcdMember;
import io.steelyard.testkit.Partition;
import java.nio.file.Files;
import java.nio.file.Path;
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
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

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
    etcd.undoFaults(Duration.ofSeconds(30));
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
   * Agent 0 notices its keepalive's silence itself, well inside the 5 s TTL, and moves it to a
   * fresh connection: its key never expires, so no client ever sees server 0 leave.
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
      assertThat(fleet.expiredKeysSeen()).as("servers whose key expired (agent 0's member was silent)").isEmpty();
    }
  }

  /**
   * The same claim for {@code steelyard watch} (docs/cli.md): its watch uses require-leader, so
   * when the member it is on is cut off from the others it moves, and a change made meanwhile is
   * printed while the partition holds.
   */
  @Test
  void cliWatchOnAPartitionedLeaderKeepsPrinting(@TempDir Path dir) throws Exception {
    String service = "cli-watch";
    int leader = etcd.leaderIndex();
    EtcdMember cut = etcd.member(leader);
    Path out = dir.resolve("watch.out");
    try (Client writer = EtcdConnection.of(etcd.endpoints()).connect();
        Route route = new Route(etcd, service)) {
      writer.getKVClient().put(Fleet.bytes("/services/" + service + "/127.0.0.1:7001"), Fleet.bytes("127.0.0.1:7001|1"))
          .get(10, TimeUnit.SECONDS);
      double before = Fleet.watchStreams(cut);
      route.only(leader); // its watch stream lands on the leader
      Process watch = Cli.startCapturing(route.endpoints(), out, "watch", service);
      try {
        await().atMost(Duration.ofSeconds(30)).until(() -> lines(out).contains("present 127.0.0.1:7001 weight=1"));
        await().atMost(Duration.ofSeconds(10)).until(() -> Fleet.watchStreams(cut) >= before + 1);
        route.all();

        cut.partition(Partition.FROM_PEERS);
        long t0 = System.nanoTime();
        try (Client majority = Client.builder()
            .endpoints(othersThan(cut).stream().map(EtcdMember::clientEndpoint).toArray(java.net.URI[]::new)).build()) {
          await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() -> {
            majority.getKVClient().put(Fleet.bytes("/services/" + service + "/127.0.0.1:7001"), Fleet.bytes("127.0.0.1:7001|2"))
                .get(2, TimeUnit.SECONDS);
            return true;
          });
        }
        await().atMost(Duration.ofSeconds(30)).until(() -> lines(out).contains("weight 127.0.0.1:7001 1 -> 2"));
        assertThat(cut.partitioned()).as("still partitioned when the change was printed").isPresent();
        LoggerFactory.getLogger(FreezeAndPartitionIT.class)
            .info("FIGURES cli-watch printed-after-ms={}", Fleet.millis(System.nanoTime() - t0));
      } finally {
        watch.destroy();
        watch.waitFor(10, TimeUnit.SECONDS);
      }
    }
  }

  private static List<String> lines(Path file) throws java.io.IOException {
    return Files.exists(file) ? Files.readAllLines(file) : List.of();
  }

  private static List<EtcdMember> othersThan(EtcdMember m) {
    return etcd.members().stream().filter(o -> o != m).toList();
  }
}
