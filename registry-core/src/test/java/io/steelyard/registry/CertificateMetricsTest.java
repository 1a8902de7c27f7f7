package io.steelyard.registry;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.steelyard.registry.internal.TlsFiles;
import io.steelyard.testkit.TestCertificates;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CertificateMetricsTest {

  @TempDir Path dir;

  @Test
  void filesOfConnectionsBuiltBeforeAndAfterBindingAreMeasuredUntilClosed() {
    TestCertificates certs = TestCertificates.generate(dir.resolve("pki"));
    Instant notAfter = Instant.now().plus(Duration.ofHours(3)).truncatedTo(ChronoUnit.SECONDS);
    certs.issueClientCertificate(dir.resolve("a.pem"), dir.resolve("a-key.pem"), Instant.now().minusSeconds(60), notAfter);
    TlsFiles before = TlsFiles.of(certs.caCert(), certs.clientCert(), certs.clientKey());
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    CertificateMetrics metrics = new CertificateMetrics();

    metrics.bindTo(registry);
    TlsFiles after = TlsFiles.of(certs.caCert(), dir.resolve("a.pem"), dir.resolve("a-key.pem"));
    after.require();

    assertThat(registry.get(CertificateMetrics.NOT_AFTER).tag("file", dir.resolve("a.pem").toString()).gauge().value())
        .isEqualTo(notAfter.getEpochSecond());
    assertThat(registry.get(CertificateMetrics.NOT_AFTER).tag("file", certs.clientCert().toString()).gauge().value())
        .isEqualTo(before.clientNotAfter().getEpochSecond());
    assertThat(registry.get(CertificateMetrics.NOT_AFTER).tag("file", certs.caCert().toString()).gauge().value())
        .isEqualTo(before.caNotAfter().getEpochSecond());
    assertThat(registry.get(CertificateMetrics.RELOADS).tag("file", dir.resolve("a.pem").toString()).functionCounter().count())
        .isZero();
    assertThat(registry.get(CertificateMetrics.RELOAD_FAILURES).tag("file", dir.resolve("a.pem").toString()).functionCounter().count())
        .isZero();

    metrics.close();

    assertThat(registry.getMeters()).isEmpty();
  }

  @Test
  void aRelativeAndAnAbsolutePathToTheSameFilesAreMeasuredOnce() {
    TestCertificates certs = TestCertificates.generate(dir.resolve("pki"));
    Path cwd = Path.of("").toAbsolutePath();
    SimpleMeterRegistry registry = new SimpleMeterRegistry();
    try (CertificateMetrics metrics = new CertificateMetrics()) {
      metrics.bindTo(registry);

      TlsFiles relative =
          TlsFiles.of(cwd.relativize(certs.caCert()), cwd.relativize(certs.clientCert()), cwd.relativize(certs.clientKey()));
      TlsFiles absolute =
          TlsFiles.of(
              certs.caCert().getParent().resolve("x/..").resolve(certs.caCert().getFileName()),
              certs.clientCert(),
              certs.clientKey());

      assertThat(relative).isSameAs(absolute);
      assertThat(relative.certFile()).isEqualTo(certs.clientCert().toAbsolutePath().normalize());
      assertThat(registry.find(CertificateMetrics.RELOADS).tag("file", certs.clientCert().toString()).meters())
          .hasSize(1);
      assertThat(registry.find(CertificateMetrics.NOT_AFTER).tag("file", certs.caCert().toString()).meters())
          .hasSize(1);
    }
  }
}
