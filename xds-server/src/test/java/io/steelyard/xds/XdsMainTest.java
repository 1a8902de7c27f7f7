package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;

import io.steelyard.testkit.TestCertificates;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** Refused option combinations exit 2 with one line that says what to add, before any etcd. */
class XdsMainTest {

  @TempDir Path dir;
  private final StringWriter err = new StringWriter();

  private int run(String... args) {
    CommandLine cmd = XdsMain.commandLine(new XdsMain(new PrintWriter(new StringWriter()), new CountDownLatch(1)));
    cmd.setErr(new PrintWriter(err, true));
    List<String> all = new ArrayList<>(List.of("--endpoints", "http://127.0.0.1:1", "--port", "0"));
    all.addAll(List.of(args));
    return cmd.execute(all.toArray(String[]::new));
  }

  private String line() {
    String e = err.toString().strip();
    assertThat(e.lines()).as("one line: %s", e).hasSize(1);
    return e;
  }

  private String[] mutualTls(TestCertificates certs, String... more) {
    List<String> a = new ArrayList<>(List.of(
        "--tls-cert", certs.serverCert().toString(), "--tls-key", certs.serverKey().toString(),
        "--tls-client-ca", certs.caCert().toString()));
    a.addAll(List.of(more));
    return a.toArray(String[]::new);
  }

  @Test
  void plaintextOnEveryAddressWithoutInsecureListenExitsTwoNamingTheWayOut() {
    assertThat(run("--host", "0.0.0.0")).isEqualTo(2);
    assertThat(line()).startsWith("steelyard-xds: listen: plaintext on 0.0.0.0")
        .contains("--tls-cert").contains("--insecure-listen");
  }

  @Test
  void aPlaintextHostBesideATlsListenerMustBeLoopbackToo() {
    TestCertificates certs = TestCertificates.generate(dir);
    assertThat(run(mutualTls(certs, "--host", "0.0.0.0", "--tls-listen", "127.0.0.1:0"))).isEqualTo(2);
    assertThat(line()).contains("plaintext on 0.0.0.0");
  }

  @Test
  void aClientCaWithoutTheServersCertificateExitsTwo() {
    TestCertificates certs = TestCertificates.generate(dir);
    assertThat(run("--tls-client-ca", certs.caCert().toString())).isEqualTo(2);
    assertThat(line()).contains("--tls-client-ca needs the server's own --tls-cert and --tls-key");
  }

  @Test
  void aTlsListenerWithoutACertificateExitsTwo() {
    assertThat(run("--tls-listen", "127.0.0.1:0")).isEqualTo(2);
    assertThat(line()).contains("--tls-listen needs --tls-cert and --tls-key");
  }

  @Test
  void aTlsListenerWithoutAPortExitsTwo() {
    TestCertificates certs = TestCertificates.generate(dir);
    assertThat(run(mutualTls(certs, "--tls-listen", "0.0.0.0"))).isEqualTo(2);
    assertThat(line()).contains("tls-listen: '0.0.0.0' (expected: HOST:PORT)");
  }

  @Test
  void grantsWithoutClientCertificatesExitTwo() throws Exception {
    Path grants = Files.writeString(dir.resolve("grants.json"), "{\"grants\": []}");
    assertThat(run("--authorize", grants.toString())).isEqualTo(2);
    assertThat(line()).contains("add --tls-client-ca");
  }

  @Test
  void aGrantsFileThatDoesNotParseExitsTwoNamingTheFileAndTheLine() throws Exception {
    TestCertificates certs = TestCertificates.generate(dir);
    Path grants = Files.writeString(dir.resolve("grants.json"), "{\"grants\": [\n  {\"identity\": \"a\" \"services\": []}\n]}");
    assertThat(run(mutualTls(certs, "--authorize", grants.toString()))).isEqualTo(2);
    assertThat(line()).startsWith("steelyard-xds: authorize: " + grants + ": ").contains("line 2");
  }

  @Test
  void aBoundBelowOneExitsTwo() {
    assertThat(run("--max-streams-per-peer", "0")).isEqualTo(2);
    assertThat(line()).contains("maxStreamsPerPeer: 0 (expected: at least 1)");
  }

  @Test
  void aZoneBoundBelowOneExitsTwo() {
    assertThat(run("--max-zones", "0")).isEqualTo(2);
    assertThat(line()).contains("maxZones: 0 (expected: at least 1)");
  }

  @Test
  void aBoundThatIsNotANumberExitsTwo() {
    assertThat(run("--max-names-per-stream", "many")).isEqualTo(2);
  }
}
