package io.steelyard.it;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.steelyard.agent.RegistrationState;
import io.steelyard.agent.ServiceRegistration;
import io.steelyard.discovery.ServiceWatcher;
import io.steelyard.discovery.Snapshot;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.testkit.EtcdAuthAdmin;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.TestCertificates;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * etcd auth tokens that expire under a long-lived registration and a long watch (simple tokens
 * with {@code --auth-token-ttl 1}: a token unused for a second is gone): the registration keeps
 * its key and lease and can still update its weight, and the watch keeps delivering, also after
 * etcd restarts and every stream has to be opened again with a fresh token.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TokenExpiryIT {

  @TempDir static Path dir;
  private static TestCertificates certs;
  private static EtcdCluster etcd;
  private static Client root;

  @BeforeAll
  static void startEtcdWithShortTokens() {
    certs = TestCertificates.generate(dir);
    etcd = EtcdCluster.builder().mutualTls(certs).rootPassword("rootpw").extraArgs("--auth-token-ttl", "1").build();
    etcd.start();
    etcd.authAdmin()
        .addRole("steelyard-server-greeter", EtcdAuthAdmin.Access.READWRITE, "/services/greeter/", "/services/.drained/greeter/")
        .addRole("steelyard-client", EtcdAuthAdmin.Access.READ, "/services/")
        .addUser("greeter", "greeterpw", "steelyard-server-greeter")
        .addUser("caller", "callerpw", "steelyard-client");
    root = connection("root:rootpw").connect();
  }

  @AfterAll
  static void stop() {
    root.close();
    etcd.close();
  }

  static EtcdConnection connection(String user) {
    return EtcdConnection.builder()
        .endpoints(etcd.endpoints())
        .securityOptions(user, certs.caCert(), certs.clientCert(), certs.clientKey())
        .build();
  }

  @Test
  void registrationAndWatchOutliveTheirTokens() throws Exception {
    AtomicReference<Snapshot> seen = new AtomicReference<>();
    try (ServiceRegistration registration =
            ServiceRegistration.builder(connection("greeter:greeterpw"), "greeter", "127.0.0.1:7101")
                // Outlives the restart below even on a loaded machine (a restart with TLS was seen to
                // take over 8 s at load 22): only tokens should expire.
                .ttl(Duration.ofSeconds(30))
                .weight(2)
                .build();
        ServiceWatcher watcher =
            ServiceWatcher.open(connection("caller:callerpw"), KeyLayout.defaults(), "greeter", seen::set)) {
      registration.start().get(20, TimeUnit.SECONDS);
      long lease = registration.leaseId();
      await().atMost(Duration.ofSeconds(20)).until(() -> weights(seen.get()).equals(Map.of("127.0.0.1:7101", 2)));

      // Every token expires several times over while the lease is kept alive and the watch is idle.
      await("the registration stays on its lease while tokens expire")
          .during(Duration.ofSeconds(4))
          .atMost(Duration.ofSeconds(8))
          .until(() -> registration.state() == RegistrationState.REGISTERED && registration.leaseId() == lease);

      registration.setWeightAndWait(5); // a write with an expired token: jetcd logs in again
      assertThat(etcd.logsContain("invalid auth token")).as("etcd refused an expired token").isTrue();
      await().atMost(Duration.ofSeconds(20)).until(() -> weights(seen.get()).equals(Map.of("127.0.0.1:7101", 5)));

      // A restart closes every stream; they come back with the old, long expired token.
      etcd.member(0).restart();
      etcd.awaitHealthy(Duration.ofSeconds(30));
      root.getKVClient().put(bytes("/services/greeter/127.0.0.1:7102"), bytes("127.0.0.1:7102|1")).get(20, TimeUnit.SECONDS);
      await().atMost(Duration.ofSeconds(30))
          .until(() -> weights(seen.get()).equals(Map.of("127.0.0.1:7101", 5, "127.0.0.1:7102", 1)));
      await().atMost(Duration.ofSeconds(10)).until(() -> registration.state() == RegistrationState.REGISTERED);
      assertThat(registration.leaseId()).as("the same lease, never re-registered").isEqualTo(lease);
      assertThat(root.getKVClient().get(bytes("/services/greeter/127.0.0.1:7101")).get(10, TimeUnit.SECONDS).getKvs())
          .singleElement()
          .satisfies(kv -> assertThat(kv.getLease()).isEqualTo(lease));
    }
  }

  private static Map<String, Integer> weights(Snapshot s) {
    return s == null
        ? Map.of()
        : s.instances().stream().collect(Collectors.toMap(ServiceInstance::address, ServiceInstance::weight));
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, UTF_8);
  }
}
