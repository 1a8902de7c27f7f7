package io.steelyard.testkit;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** A cluster with mutual TLS and auth: the members serve, probes work, the root user logs in. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class SecureClusterTest {

  @TempDir static Path certDir;

  @Test
  void mutualTlsWithAuthServesTheRootUserAndSurvivesARestart() throws Exception {
    TestCertificates certs = TestCertificates.generate(certDir.resolve("pki"));
    try (EtcdCluster etcd =
        EtcdCluster.builder().members(1).mutualTls(certs).rootPassword("rootpw").build()) {
      etcd.start();
      assertThat(etcd.clientEndpoints()).singleElement().satisfies(u -> assertThat(u.getScheme()).isEqualTo("https"));

      try (Client root = client(etcd, certs, certs.clientCert(), certs.clientKey(), "root", "rootpw")) {
        root.getKVClient().put(bytes("k"), bytes("v")).get(10, TimeUnit.SECONDS);
        assertThat(root.getKVClient().get(bytes("k")).get(10, TimeUnit.SECONDS).getKvs().get(0).getValue().toString(UTF_8))
            .isEqualTo("v");
      }
      etcd.authAdmin()
          .addRole("reader", EtcdAuthAdmin.Access.READ, "/r/")
          .addUser("alice", "alicepw", "reader");
      try (Client alice = client(etcd, certs, certs.clientCert(), certs.clientKey(), "alice", "alicepw")) {
        alice.getKVClient().get(bytes("/r/x")).get(10, TimeUnit.SECONDS);
        assertThatThrownBy(() -> alice.getKVClient().put(bytes("/r/x"), bytes("v")).get(10, TimeUnit.SECONDS))
            .hasStackTraceContaining("permission denied");
        assertThatThrownBy(() -> alice.getKVClient().get(bytes("/r0")).get(10, TimeUnit.SECONDS))
            .hasStackTraceContaining("permission denied");
      }
      // Health and leadership are still probed once auth is on and after a restart.
      etcd.member(0).restart();
      etcd.awaitHealthy(Duration.ofSeconds(30));
      assertThat(etcd.leaderIndex()).isZero();
    }
  }

  @Test
  void serverOnlyTlsNeedsNoClientCertificateAndRefusesPlainText() throws Exception {
    TestCertificates certs = TestCertificates.generate(certDir.resolve("pki2"));
    try (EtcdCluster etcd = EtcdCluster.builder().members(1).tls(certs).build()) {
      etcd.start();
      try (Client c = client(etcd, certs, null, null, null, null)) {
        c.getKVClient().put(bytes("k"), bytes("v")).get(10, TimeUnit.SECONDS);
      }
      URI plain = URI.create(etcd.endpoints().replace("https://", "http://"));
      try (Client c = Client.builder().endpoints(plain).connectTimeout(Duration.ofSeconds(2)).build()) {
        assertThatThrownBy(() -> c.getKVClient().get(bytes("k")).get(5, TimeUnit.SECONDS)).isNotNull();
      }
    }
  }

  private static Client client(
      EtcdCluster etcd, TestCertificates certs, Path cert, Path key, String user, String password)
      throws Exception {
    var b = Client.builder().endpoints(etcd.clientEndpoints().toArray(URI[]::new));
    b.sslContext(ssl -> {
      ssl.trustManager(certs.caCert().toFile());
      if (cert != null) {
        ssl.keyManager(cert.toFile(), key.toFile());
      }
    });
    if (user != null) {
      b.user(bytes(user)).password(bytes(password));
    }
    return b.build();
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, UTF_8);
  }
}
