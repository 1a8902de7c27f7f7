package io.steelyard.it.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.ManagedChannel;
import io.steelyard.it.ChildGreeter;
import io.steelyard.it.TransportLoss;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A registered server crashes (SIGKILL of its JVM: no deregistration, its lease lives on) under
 * load from three clients without retries. Its key expires with the lease, and every client
 * drops it within TTL + 1 s; the only failed calls are those whose stream had gone to it, and
 * each ends with a status grpc-java gives a call whose transport died ({@link
 * TransportLoss#endedByTransportLoss}).
 */
@Tag("faults")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ServerCrashIT {

  private static final Logger log = LoggerFactory.getLogger(ServerCrashIT.class);
  private static final String SERVICE = "crash";
  private static final Duration TTL = Duration.ofSeconds(5);

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().members(3).backend(EtcdCluster.Backend.BINARY).build();

  private final Closer closer = new Closer();

  @AfterEach
  void closeAll() throws Exception {
    closer.close();
  }

  @Test
  void crashedServerLeavesEveryClientWithinTtlPlusOneSecondAndOnlyItsCallsFail() throws Exception {
    FleetServer a = FleetServer.start(etcd.endpoints(), SERVICE, 1, TTL);
    closer.add(a::shutdownNow);
    FleetServer b = FleetServer.start(etcd.endpoints(), SERVICE, 2, TTL);
    closer.add(b::shutdownNow);
    ChildGreeter child = ChildGreeter.start(
        "--endpoints", etcd.endpoints(), "--service", SERVICE, "--weight", "5", "--ttl", TTL.toSeconds() + "s");
    closer.add(child);
    String doomed = child.address();

    List<ViewRecorder> views = new ArrayList<>();
    List<PacedLoad> loads = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      // Three distinct connections (endpoint order differs), so three watchers, as in three processes.
      List<String> endpoints = new ArrayList<>(List.of(etcd.endpoints().split(",")));
      java.util.Collections.rotate(endpoints, i);
      EtcdConnection connection = EtcdConnection.of(String.join(",", endpoints));
      ManagedChannel channel = Fleet.channel(connection, SERVICE);
      closer.add(() -> channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
      ViewRecorder view = new ViewRecorder("client" + i, connection, SERVICE);
      closer.add(view);
      views.add(view);
      await().atMost(Duration.ofSeconds(30)).until(() -> view.weights().size() == 3);
      Fleet.warmUp(channel, 3);
      PacedLoad load = PacedLoad.start("client" + i, channel, Duration.ofMillis(20), Duration.ofSeconds(5));
      closer.add(load);
      loads.add(load);
    }
    await().atMost(Duration.ofSeconds(30)).until(() -> loads.stream().allMatch(l -> l.callsTo(doomed) >= 20));

    long killed = System.nanoTime();
    child.kill(); // returns once the process is gone
    long dead = System.nanoTime();

    Map<String, Long> goneAfterMillis = new TreeMap<>();
    for (ViewRecorder v : views) {
      await().atMost(TTL.plusSeconds(1).plusMillis(500)).pollInterval(Duration.ofMillis(20))
          .until(() -> !v.weights().containsKey(doomed));
      long at = v.removalsSince(killed).stream().filter(r -> r.address().equals(doomed)).findFirst().orElseThrow().nanos();
      goneAfterMillis.put(v.name(), Fleet.millis(at - killed));
    }
    assertThat(goneAfterMillis.values()).as("ms from SIGKILL to removal, per client")
        .allSatisfy(ms -> assertThat(ms).isLessThanOrEqualTo(TTL.plusSeconds(1).toMillis()));
    long sentBefore = loads.stream().mapToLong(PacedLoad::sent).sum();
    await().atMost(Duration.ofSeconds(10)).until(() -> loads.stream().mapToLong(PacedLoad::sent).sum() >= sentBefore + 300);
    for (PacedLoad l : loads) {
      l.close();
    }

    // The dead address stays in every view until its lease expires (seconds), yet only calls
    // already on their way to it when it died fail: each went to it, and none started later than
    // the moment the crash was complete plus the time a loaded client needs to read the reset.
    List<PacedLoad.Failure> failures = loads.stream().flatMap(l -> l.failures().stream()).toList();
    assertThat(failures).as("failed calls").allSatisfy(f -> {
      assertThat(f.backend()).as("the server its stream went to").isEqualTo(doomed);
      assertThat(TransportLoss.endedByTransportLoss(f.status())).as("ended by the loss of its transport: %s", f.status())
          .isTrue();
      assertThat(Fleet.millis(f.startNanos() - dead)).as("started ms after the crash was complete").isLessThan(1_000);
    });
    failures.forEach(f -> log.info("failed call: started {} ms after the kill, ended {} ms after: {}",
        Fleet.millis(f.startNanos() - killed), Fleet.millis(f.endNanos() - killed), f.status()));
    long maxStartAfterKill = failures.stream().mapToLong(f -> Fleet.millis(f.startNanos() - killed)).max().orElse(0);
    log.info("FIGURES crash removal-after-kill-ms={} calls-sent={} calls-failed={} failed-calls-latest-start-after-kill-ms={}"
            + " kill-took-ms={}",
        goneAfterMillis, loads.stream().mapToLong(PacedLoad::sent).sum(), failures.size(), maxStartAfterKill,
        Fleet.millis(dead - killed));
    for (PacedLoad l : loads) {
      assertThat(l.callsByBackend()).as("%s kept calling the others", l.name()).containsKeys(a.address(), b.address());
    }
  }
}
