package io.steelyard.registry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.common.base.Ticker;
import io.steelyard.testkit.TestCertificates;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.Principal;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TlsFilesTest {

  private static final Instant NOW = Instant.now().truncatedTo(ChronoUnit.SECONDS);
  private static final Instant FIRST_NOT_AFTER = NOW.plus(Duration.ofHours(1));
  private static final Instant SECOND_NOT_AFTER = NOW.plus(Duration.ofHours(2));

  @TempDir static Path pki;
  private static TestCertificates certs;

  @TempDir Path dir;
  private final AtomicLong nanos = new AtomicLong();
  private final Ticker ticker =
      new Ticker() {
        @Override
        public long read() {
          return nanos.get();
        }
      };
  private Path cert;
  private Path key;
  private TlsFiles files;

  @BeforeAll
  static void makeCa() {
    certs = TestCertificates.generate(pki);
  }

  @BeforeEach
  void firstCertificate() {
    cert = dir.resolve("client.pem");
    key = dir.resolve("client-key.pem");
    certs.issueClientCertificate(cert, key, NOW.minus(Duration.ofHours(1)), FIRST_NOT_AFTER);
    files = new TlsFiles(certs.caCert(), cert, key, ticker, Clock.fixed(NOW, ZoneOffset.UTC));
    files.require();
  }

  private void later() {
    nanos.addAndGet(TlsFiles.RECHECK.toNanos());
  }

  @Test
  void changedFilesAreUsedFromTheNextCheck() {
    certs.issueClientCertificate(cert, key, NOW.minus(Duration.ofHours(1)), SECOND_NOT_AFTER);
    assertThat(files.clientNotAfter()).as("within the recheck interval").isEqualTo(FIRST_NOT_AFTER);

    later();

    assertThat(files.clientNotAfter()).isEqualTo(SECOND_NOT_AFTER);
    assertThat(files.reloads()).isEqualTo(1);
    assertThat(files.failedReloads()).isZero();
  }

  @Test
  void unchangedFilesAreNoReload() {
    later();
    later();

    assertThat(files.clientNotAfter()).isEqualTo(FIRST_NOT_AFTER);
    assertThat(files.reloads()).isZero();
  }

  @Test
  void aSwapOfTheDataSymlinkAsKubernetesDoesIsSeen() throws Exception {
    Path mount = dir.resolve("mount");
    Path first = Files.createDirectories(mount.resolve("..2026_12_02_01_00_00.1"));
    Files.copy(cert, first.resolve("tls.crt"));
    Files.copy(key, first.resolve("tls.key"));
    Files.createSymbolicLink(mount.resolve("..data"), first.getFileName());
    Files.createSymbolicLink(mount.resolve("tls.crt"), Path.of("..data/tls.crt"));
    Files.createSymbolicLink(mount.resolve("tls.key"), Path.of("..data/tls.key"));
    TlsFiles mounted =
        new TlsFiles(certs.caCert(), mount.resolve("tls.crt"), mount.resolve("tls.key"), ticker,
            Clock.fixed(NOW, ZoneOffset.UTC));
    assertThat(mounted.clientNotAfter()).isEqualTo(FIRST_NOT_AFTER);

    Path second = Files.createDirectories(mount.resolve("..2026_12_03_01_00_00.2"));
    certs.issueClientCertificate(second.resolve("tls.crt"), second.resolve("tls.key"),
        NOW.minus(Duration.ofHours(1)), SECOND_NOT_AFTER);
    Files.createSymbolicLink(mount.resolve("..data_tmp"), second.getFileName());
    Files.move(mount.resolve("..data_tmp"), mount.resolve("..data"), StandardCopyOption.ATOMIC_MOVE);
    later();

    assertThat(mounted.clientNotAfter()).isEqualTo(SECOND_NOT_AFTER);
    assertThat(mounted.reloads()).isEqualTo(1);
  }

  @Test
  void aHalfWrittenKeyIsIgnoredUntilItIsComplete() throws Exception {
    Path newCert = dir.resolve("new.pem");
    Path newKey = dir.resolve("new-key.pem");
    certs.issueClientCertificate(newCert, newKey, NOW.minus(Duration.ofHours(1)), SECOND_NOT_AFTER);
    byte[] wholeKey = Files.readAllBytes(newKey);
    Files.copy(newCert, cert, StandardCopyOption.REPLACE_EXISTING);
    Files.write(key, java.util.Arrays.copyOf(wholeKey, wholeKey.length / 2));
    later();

    assertThat(files.clientNotAfter()).as("the last good pair stays").isEqualTo(FIRST_NOT_AFTER);
    later();
    assertThat(files.failedReloads()).as("counted once per content").isEqualTo(1);

    Files.write(key, wholeKey);
    later();

    assertThat(files.clientNotAfter()).isEqualTo(SECOND_NOT_AFTER);
    assertThat(files.reloads()).isEqualTo(1);
  }

  @Test
  void aKeyOfAnotherCertificateIsIgnored() throws Exception {
    certs.issueClientCertificate(
        dir.resolve("other.pem"), dir.resolve("other-key.pem"), NOW.minus(Duration.ofHours(1)), SECOND_NOT_AFTER);
    Files.copy(dir.resolve("other.pem"), cert, StandardCopyOption.REPLACE_EXISTING);
    later();

    assertThat(files.clientNotAfter()).isEqualTo(FIRST_NOT_AFTER);
    assertThat(files.failedReloads()).isEqualTo(1);
  }

  @Test
  void aSwapBetweenReadingTheCertificateAndTheKeyIsNoFailedReload() throws Exception {
    byte[] firstCert = Files.readAllBytes(cert);
    AtomicBoolean certReadBeforeTheSwap = new AtomicBoolean();
    TlsFiles.FileReader reader =
        file -> file.equals(cert) && certReadBeforeTheSwap.getAndSet(false) ? firstCert : Files.readAllBytes(file);
    TlsFiles swapped = new TlsFiles(certs.caCert(), cert, key, ticker, Clock.fixed(NOW, ZoneOffset.UTC), reader);
    swapped.require();
    certs.issueClientCertificate(cert, key, NOW.minus(Duration.ofHours(1)), SECOND_NOT_AFTER);
    certReadBeforeTheSwap.set(true);
    later();

    assertThat(swapped.clientNotAfter()).isEqualTo(SECOND_NOT_AFTER);
    assertThat(certReadBeforeTheSwap).as("the first read mixed the two generations").isFalse();
    assertThat(swapped.reloads()).isEqualTo(1);
    assertThat(swapped.failedReloads()).isZero();
    assertThat(swapped.problem()).isNull();
  }

  @Test
  void unusableFilesAtTheStartAreRefusedNamingTheFile() throws Exception {
    Files.writeString(key, "-----BEGIN PRIVATE KEY-----\nMIGH", StandardCharsets.US_ASCII);
    TlsFiles broken = new TlsFiles(certs.caCert(), cert, key, ticker, Clock.systemUTC());

    assertThatThrownBy(broken::require)
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining(key.toString());
  }

  @Test
  void theKeyManagerServesThePairInUseAtTheHandshake() {
    X509Certificate[] before = chainOfTheNextHandshake();
    certs.issueClientCertificate(cert, key, NOW.minus(Duration.ofHours(1)), SECOND_NOT_AFTER);
    later();

    X509Certificate[] after = chainOfTheNextHandshake();

    assertThat(before[0].getNotAfter().toInstant()).isEqualTo(FIRST_NOT_AFTER);
    assertThat(after[0].getNotAfter().toInstant()).isEqualTo(SECOND_NOT_AFTER);
  }

  @Test
  void aHandshakeThatChoseBeforeAReloadGetsAMatchingPair() {
    String alias = files.keyManager().chooseEngineClientAlias(new String[] {"EC"}, new Principal[0], null);
    certs.issueClientCertificate(cert, key, NOW.minus(Duration.ofHours(1)), SECOND_NOT_AFTER);
    later();
    files.require();

    assertThat(files.keyManager().getCertificateChain(alias)[0].getNotAfter().toInstant())
        .isEqualTo(FIRST_NOT_AFTER);
    assertThat(files.keyManager().getPrivateKey(alias)).isNotNull();
  }

  @Test
  void aHandshakeThatChoseBeforeAReloadGetsItsPairAfterAnotherHandshakeChoseTheNewOne() {
    String first = files.keyManager().chooseEngineClientAlias(new String[] {"EC"}, new Principal[0], null);
    X509Certificate[] firstChainBefore = files.keyManager().getCertificateChain(first);
    certs.issueClientCertificate(cert, key, NOW.minus(Duration.ofHours(1)), SECOND_NOT_AFTER);
    later();

    String second = files.keyManager().chooseEngineClientAlias(new String[] {"EC"}, new Principal[0], null);

    assertThat(second).isNotEqualTo(first);
    assertThat(files.keyManager().getCertificateChain(second)[0].getNotAfter().toInstant())
        .isEqualTo(SECOND_NOT_AFTER);
    assertThat(files.keyManager().getCertificateChain(first)).isEqualTo(firstChainBefore);
    assertThat(files.keyManager().getPrivateKey(first))
        .as("the key of the first handshake's certificate")
        .isNotNull()
        .isNotEqualTo(files.keyManager().getPrivateKey(second));
  }

  @Test
  void theClientCertificateIsDescribedWithItsNotAfterAndWhetherItExpired() {
    TlsFiles expiredByNow =
        new TlsFiles(certs.caCert(), cert, key, ticker, Clock.fixed(FIRST_NOT_AFTER.plusSeconds(1), ZoneOffset.UTC));

    assertThat(files.describeClientCertificate()).isEqualTo(cert + " (not after " + FIRST_NOT_AFTER + ")");
    assertThat(expiredByNow.describeClientCertificate())
        .isEqualTo(cert + " (not after " + FIRST_NOT_AFTER + ", expired)");
    assertThat(expiredByNow.clientCertificateValidNow()).isFalse();
  }

  @Test
  void aServersOwnCertificateAndKeyWithoutACaAreReloadedAndTrustNoPeer() {
    TlsFiles serverOnly = new TlsFiles(null, cert, key, ticker, Clock.fixed(NOW, ZoneOffset.UTC));
    serverOnly.require();
    String before = serverOnly.keyManager().chooseEngineServerAlias("EC", new Principal[0], null);
    certs.issueClientCertificate(cert, key, NOW.minus(Duration.ofHours(1)), SECOND_NOT_AFTER);
    later();

    String after = serverOnly.keyManager().chooseEngineServerAlias("EC", new Principal[0], null);

    assertThat(serverOnly.keyManager().getCertificateChain(before)[0].getNotAfter().toInstant())
        .isEqualTo(FIRST_NOT_AFTER);
    assertThat(serverOnly.keyManager().getCertificateChain(after)[0].getNotAfter().toInstant())
        .isEqualTo(SECOND_NOT_AFTER);
    assertThat(serverOnly.reloads()).isEqualTo(1);
    assertThat(serverOnly.caNotAfter()).isNull();
    assertThat(serverOnly.trustManager().getAcceptedIssuers()).isEmpty();
    assertThatThrownBy(() -> serverOnly.trustManager().checkClientTrusted(
            serverOnly.keyManager().getCertificateChain(after), "EC", (javax.net.ssl.SSLEngine) null))
        .isInstanceOf(java.security.cert.CertificateException.class)
        .hasMessageContaining("no CA file");
  }

  @Test
  void filesWithNeitherACaNorAPairAreRefused() {
    assertThatThrownBy(() -> TlsFiles.of(null, null, null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("expected: a CA file, a certificate with its key, or both");
    assertThatThrownBy(() -> TlsFiles.of(null, cert, null)).isInstanceOf(IllegalArgumentException.class);
  }

  private X509Certificate[] chainOfTheNextHandshake() {
    String alias = files.keyManager().chooseEngineClientAlias(new String[] {"EC"}, new Principal[0], null);
    return files.keyManager().getCertificateChain(alias);
  }
}
