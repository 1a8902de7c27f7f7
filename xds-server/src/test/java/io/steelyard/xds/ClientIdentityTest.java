package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;

import io.steelyard.testkit.TestCertificates;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ClientIdentityTest {

  @TempDir Path dir;

  private static X509Certificate read(Path file) throws Exception {
    try (InputStream in = Files.newInputStream(file)) {
      return (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
    }
  }

  @Test
  void theUriSanComesBeforeTheCommonName() throws Exception {
    TestCertificates certs = TestCertificates.generate(dir);
    certs.issueClientCertificate(dir.resolve("g.pem"), dir.resolve("g-key.pem"), "greeter-client", "spiffe://test/greeter-client");
    assertThat(ClientIdentity.of(read(dir.resolve("g.pem")))).isEqualTo("spiffe://test/greeter-client");
  }

  @Test
  void withoutSansTheCommonNameIsTheIdentity() throws Exception {
    TestCertificates certs = TestCertificates.generate(dir);
    assertThat(ClientIdentity.of(read(certs.clientCert()))).isEqualTo(TestCertificates.CLIENT_COMMON_NAME);
  }

  @Test
  void anIpSanAloneLeavesTheCommonName() throws Exception {
    TestCertificates certs = TestCertificates.generate(dir);
    certs.issueServerCertificate(dir.resolve("s.pem"), dir.resolve("s-key.pem"));
    assertThat(ClientIdentity.of(read(dir.resolve("s.pem")))).isEqualTo("server");
  }

  @Test
  void theDnsSanComesBeforeTheCommonName() throws Exception {
    TestCertificates certs = TestCertificates.generate(dir);
    certs.issueClientCertificate(dir.resolve("d.pem"), dir.resolve("d-key.pem"), "greeter-client", null, "greeter.example");
    assertThat(ClientIdentity.of(read(dir.resolve("d.pem")))).isEqualTo("greeter.example");
  }

  @Test
  void theUriSanComesBeforeTheDnsSan() throws Exception {
    TestCertificates certs = TestCertificates.generate(dir);
    certs.issueClientCertificate(dir.resolve("u.pem"), dir.resolve("u-key.pem"), "greeter-client",
        "spiffe://test/greeter-client", "greeter.example");
    assertThat(ClientIdentity.of(read(dir.resolve("u.pem")))).isEqualTo("spiffe://test/greeter-client");
  }

  @Test
  void aCertificateNamingNoneOfTheThreeHasNoIdentity() throws Exception {
    TestCertificates certs = TestCertificates.generate(dir);
    certs.issueClientCertificate(dir.resolve("n.pem"), dir.resolve("n-key.pem"), null, null, null);
    assertThat(ClientIdentity.of(read(dir.resolve("n.pem")))).isNull();
  }

  @Test
  void noSessionNoIdentity() {
    assertThat(ClientIdentity.of((javax.net.ssl.SSLSession) null)).isNull();
  }
}
