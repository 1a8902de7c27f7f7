package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.RegistryException;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.TestCertificates;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A client certificate rotated on disk is picked up without a restart: a registration whose
 * certificate etcd rejects (here: expired) is REFUSED (TLS) with the file named, and once valid
 * files replace the old ones at the same paths, its next attempt's handshake uses them and the
 * registration succeeds.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class CertificateRotationIT {

  private static final TestCertificates certs = TestCertificates.generate();

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().mutualTls(certs).build();

  @TempDir Path dir;


  @Test
  void rotatedClientCertificateFilesAreReadAgainAfterATlsRefusal() throws Exception {
    Path cert = dir.resolve("client.pem");
    Path key = dir.resolve("client-key.pem");
    Files.copy(certs.expiredClientCert(), cert);
    Files.copy(certs.expiredClientKey(), key);
    EtcdConnection etcdConnection =
        EtcdConnection.builder().endpoints(etcd.endpoints()).tls(certs.caCert(), cert, key).build();
    try (ServiceRegistration r = ServiceRegistration.builder(etcdConnection, "greeter", "10.0.0.8:1")
        .retryBackoff(Duration.ofMillis(100), Duration.ofSeconds(1))
        .build()) {
      r.start();
      await().atMost(Duration.ofSeconds(20)).until(() -> r.state() == RegistrationState.REFUSED);
      assertThat(r.refusal()).get().extracting(RegistryException::kind).isEqualTo(RegistryException.Kind.TLS);
      assertThat(r.refusal().get().getMessage()).startsWith("etcd refused the client certificate " + cert);

      Files.copy(certs.clientCert(), cert, StandardCopyOption.REPLACE_EXISTING);
      Files.copy(certs.clientKey(), key, StandardCopyOption.REPLACE_EXISTING);
      // The next attempt after a refusal waits the backoff's cap (1 s here).
      await().atMost(Duration.ofSeconds(40)).until(() -> r.state() == RegistrationState.REGISTERED);
    }
  }
}
