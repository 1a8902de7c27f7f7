package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Watch;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.EtcdMember;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A three-member cluster loses its leader: the key must never disappear, etcd must keep
 * answering, and a watch opened before the failover must still deliver a write made after it.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class LeaderLossIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().members(3).build();

  @Test
  void keyIsNeverLostWhenTheLeaderIsKilled() throws Exception {
    try (EtcdProbe probe = new EtcdProbe(etcd.clientEndpoints());
        ServiceRegistration reg =
            ServiceRegistration.builder(
                    EtcdConnection.of(etcd.endpoints()), "leaderloss", "127.0.0.1:42001")
                .ttl(Duration.ofSeconds(3))
                .build()) {
      reg.start().get(30, TimeUnit.SECONDS);
      long revision = probe.get(reg.key()).orElseThrow().getModRevision();
      // Every change of the key from now on, deletes included; jetcd resumes the watch from the
      // last revision it saw, so nothing is missed across the failover.
      List<WatchEvent> changes = new CopyOnWriteArrayList<>();
      try (Watch.Watcher w =
          probe.client.getWatchClient()
              .watch(
                  EtcdProbe.bytes(reg.key()),
                  WatchOption.builder().withRevision(revision + 1).build(),
                  r -> changes.addAll(r.getEvents()))) {

        EtcdMember leader = etcd.leader();
        leader.kill();
        etcd.awaitHealthy(Duration.ofSeconds(30));
        // The probe's channel may still hold the dead member's connection for a moment.
        await().atMost(Duration.ofSeconds(10)).ignoreExceptions()
            .until(() -> probe.get(reg.key()).isPresent());

        // Several TTLs under the new leader; a get that fails (etcd not answering) fails the test.
        await().during(Duration.ofSeconds(8)).atMost(Duration.ofSeconds(12))
            .pollInterval(Duration.ofMillis(200))
            .until(() -> probe.get(reg.key()).isPresent());
        // The watch survived the failover: a write made now reaches it.
        reg.setWeight(7);
        await().atMost(Duration.ofSeconds(10))
            .until(() -> changes.stream().anyMatch(e -> e.getEventType() == WatchEvent.EventType.PUT
                && e.getKeyValue().getValue().toString(StandardCharsets.UTF_8).equals("127.0.0.1:42001|7")));
        leader.start();
        etcd.awaitHealthy(Duration.ofSeconds(30));

        await().atMost(Duration.ofSeconds(10))
            .until(() -> probe.lease(reg.key()) == reg.leaseId());
        assertThat(reg.state()).isEqualTo(RegistrationState.REGISTERED);
        assertThat(changes).extracting(WatchEvent::getEventType).doesNotContain(WatchEvent.EventType.DELETE);
      }
    }
  }
}
