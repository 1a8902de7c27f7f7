package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.etcd.jetcd.KeyValue;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.EtcdGrpcProxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;

/**
 * Registrations keep their leases through etcd's gRPC proxy. The 3.4 proxy answers a keepalive
 * only at its own renewal of the lease, so many answers come 2·TTL/3 after the last (6.7–7.7 s
 * at TTL 10 s), past the fixed silence threshold (5.5 s); an agent that took that for a silent
 * member moved its keepalive to a fresh connection, to the same proxy, again and again (57 moves
 * of these 20 leases in one run of the old code).
 * Here the registrations keep the keepalive stream their client opened and their leases for
 * three TTLs (docs/operations.md, "Keepalives through a proxy").
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ProxyKeepAliveIT {

  /** The default TTL: through a 3.4 proxy the threshold's cap covers the gaps from 8 s on. */
  private static final Duration TTL = Duration.ofSeconds(10);
  private static final int REGISTRATIONS = 20;

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private static EtcdGrpcProxy proxy;

  /**
   * What the lease share says when it takes a keepalive for silent: the one trace of a silence
   * (it moves the keepalive, or says why it cannot), which no state or meter shows.
   */
  private final ListAppender<ILoggingEvent> shareLog = new ListAppender<>();
  private final Logger share = (Logger) LoggerFactory.getLogger(LeaseShare.class);

  @BeforeAll
  static void startProxy() {
    proxy = EtcdGrpcProxy.start(etcd);
  }

  @AfterAll
  static void stopProxy() {
    if (proxy != null) {
      proxy.close();
    }
  }

  @BeforeEach
  void listen() {
    shareLog.start();
    share.addAppender(shareLog);
  }

  @AfterEach
  void stopListening() {
    share.detachAppender(shareLog);
  }

  @Test
  void leasesKeptThroughTheProxyAreNeitherMovedNorLost() throws Exception {
    List<ServiceRegistration> regs = new ArrayList<>();
    List<RegistrationState> seen = new CopyOnWriteArrayList<>();
    try (EtcdProbe direct = new EtcdProbe(etcd.clientEndpoints())) {
      for (int i = 0; i < REGISTRATIONS; i++) {
        // On a client the agent owns (one for the connection), which it replaces on a silence.
        regs.add(
            ServiceRegistration.builder(EtcdConnection.of(proxy.endpoint()), "proxied", "10.0.0.1:" + (30000 + i))
                .ttl(TTL)
                .listener(seen::add)
                .build());
      }
      CompletableFuture.allOf(regs.stream().map(ServiceRegistration::start).toArray(CompletableFuture<?>[]::new))
          .get(60, TimeUnit.SECONDS);
      Map<String, Long> leases = new HashMap<>();
      regs.forEach(r -> leases.put(r.key(), r.leaseId()));

      await().during(TTL.multipliedBy(3)).atMost(TTL.multipliedBy(4)).pollInterval(Duration.ofMillis(500))
          .until(() -> regs.stream().allMatch(
              r -> r.state() == RegistrationState.REGISTERED && r.leaseId() == leases.get(r.key())));

      assertThat(seen).containsOnly(RegistrationState.REGISTERING, RegistrationState.REGISTERED).hasSize(2 * REGISTRATIONS);
      // No keepalive taken for silent, so none moved to a fresh connection.
      assertThat(shareLog.list)
          .filteredOn(e -> e.getLevel() == Level.WARN && e.getFormattedMessage().contains(" silent for "))
          .extracting(ILoggingEvent::getFormattedMessage)
          .isEmpty();
      // etcd itself holds every key on the lease it was registered with.
      for (ServiceRegistration r : regs) {
        List<KeyValue> kvs = direct.client.getKVClient().get(EtcdProbe.bytes(r.key())).get(10, TimeUnit.SECONDS).getKvs();
        assertThat(kvs).as(r.key()).hasSize(1);
        assertThat(kvs.get(0).getLease()).as(r.key()).isEqualTo(leases.get(r.key()));
      }
    } finally {
      regs.forEach(ServiceRegistration::close);
    }
  }
}
