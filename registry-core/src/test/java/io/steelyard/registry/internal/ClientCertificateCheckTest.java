package io.steelyard.registry.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.common.base.Ticker;
import io.grpc.Status;
import io.steelyard.registry.RegistryException;
import io.steelyard.testkit.TestCertificates;
import java.net.ConnectException;
import java.nio.file.Path;
import java.security.cert.CertificateExpiredException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import javax.net.ssl.SSLHandshakeException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ClientCertificateCheckTest {

  private static final Instant NOW = Instant.now().truncatedTo(ChronoUnit.SECONDS);
  private static final Instant NOT_AFTER = NOW.plusSeconds(60);
  private static final Status CLOSED = Status.UNAVAILABLE.withDescription("Network closed for unknown reason");

  @TempDir static Path dir;
  private static TestCertificates certs;

  @BeforeAll
  static void makeCertificate() {
    certs = TestCertificates.generate(dir.resolve("pki"));
    certs.issueClientCertificate(dir.resolve("c.pem"), dir.resolve("k.pem"), NOW.minusSeconds(60), NOT_AFTER);
  }

  private static ClientCertificateCheck at(Instant now) {
    return new ClientCertificateCheck(
        new TlsFiles(certs.caCert(), dir.resolve("c.pem"), dir.resolve("k.pem"), Ticker.systemTicker(),
            Clock.fixed(now, ZoneOffset.UTC)));
  }

  @Test
  void aClosedConnectionWithAnExpiredCertificateIsNamedAsItsRefusal() {
    Status named = at(NOT_AFTER.plusSeconds(1)).named(CLOSED);

    RegistryException e = EtcdErrors.toRegistryException("list greeter", named.asRuntimeException());

    assertThat(e.kind()).isEqualTo(RegistryException.Kind.TLS);
    assertThat(e.getMessage())
        .isEqualTo("etcd refused the client certificate " + dir.resolve("c.pem") + " (not after "
            + NOT_AFTER + ", expired) (list greeter): UNAVAILABLE: Network closed for unknown reason");
    assertThat(RetryPolicy.classify(e)).isEqualTo(RetryPolicy.Failure.REFUSED);
  }

  @Test
  void aTlsAlertFromEtcdNamesTheCertificateEvenWhileValid() {
    Status alert = Status.UNAVAILABLE.withCause(new SSLHandshakeException("Received fatal alert: bad_certificate"));

    RegistryException e =
        EtcdErrors.toRegistryException("list greeter", at(NOW).named(alert).asRuntimeException());

    assertThat(e.getMessage())
        .startsWith("etcd refused the client certificate " + dir.resolve("c.pem") + " (not after " + NOT_AFTER + ")")
        .endsWith("SSLHandshakeException: Received fatal alert: bad_certificate");
  }

  @Test
  void aClosedConnectionWithAValidCertificateIsLeftAsItIs() {
    assertThat(at(NOW).named(CLOSED)).isSameAs(CLOSED);
  }

  @Test
  void aRefusedConnectionIsEtcdAwayEvenWithAnExpiredCertificate() {
    Status refused = Status.UNAVAILABLE.withCause(new ConnectException("Connection refused"));

    assertThat(at(NOT_AFTER.plusSeconds(1)).named(refused)).isSameAs(refused);
  }

  @Test
  void thisClientsOwnVerdictOnEtcdsCertificateIsLeftToEtcdErrors() {
    SSLHandshakeException own = new SSLHandshakeException("PKIX path validation failed");
    own.initCause(new CertificateExpiredException("NotAfter"));
    Status failed = Status.UNAVAILABLE.withCause(own);

    assertThat(at(NOW).named(failed)).isSameAs(failed);
  }

  @Test
  void otherCodesAreLeftAsTheyAre() {
    Status denied = Status.PERMISSION_DENIED;

    assertThat(at(NOT_AFTER.plus(Duration.ofHours(1))).named(denied)).isSameAs(denied);
  }
}
