package io.steelyard.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.TestCertificates;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code steelyard console}: its READY line (only once the registry is listed), its options'
 * checks, and that it serves.
 */
@Timeout(60)
class ConsoleCommandIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private static final Pattern READY = Pattern.compile("READY console=(https?://\\S+/)\\n");
  private final HttpClient http = HttpClient.newHttpClient();

  @Test
  void printsReadyWithTheUrlAndServesThePagesUntilStopped() throws Exception {
    Cli.Running console = Cli.withEndpoints(etcd.endpoints()).start("console", "--port", "0");

    String url = await().atMost(Duration.ofSeconds(20)).until(() -> ready(console.out()), u -> u != null);
    HttpResponse<String> page = http.send(HttpRequest.newBuilder(URI.create(url)).build(),
        HttpResponse.BodyHandlers.ofString());
    HttpResponse<String> api = http.send(HttpRequest.newBuilder(URI.create(url + "api/services")).build(),
        HttpResponse.BodyHandlers.ofString());
    console.interrupt();
    Cli.Result r = console.result(Duration.ofSeconds(10));

    assertThat(url).startsWith("http://127.0.0.1:");
    assertThat(page.statusCode()).isEqualTo(200);
    assertThat(page.body()).contains("<h1>Services</h1>");
    assertThat(api.statusCode()).isEqualTo(200);
    assertThat(r.exitCode()).as(r.toString()).isZero();
  }

  @Test
  void readyComesOnlyOnceTheRegistryIsListed() throws Exception {
    try (Client client = Client.builder().endpoints(etcd.endpoints()).build()) {
      client.getKVClient().put(bytes("/services/listed-first/10.0.0.7:50051"), bytes("10.0.0.7:50051|3"))
          .get(10, TimeUnit.SECONDS);
    }
    Cli.Running console = Cli.withEndpoints(etcd.endpoints()).start("console", "--port", "0");

    // Polled closely, so the request follows the READY line within milliseconds.
    String url = await().atMost(Duration.ofSeconds(20)).pollDelay(Duration.ZERO)
        .pollInterval(Duration.ofMillis(2)).until(() -> ready(console.out()), u -> u != null);
    HttpResponse<String> api = http.send(HttpRequest.newBuilder(URI.create(url + "api/services")).build(),
        HttpResponse.BodyHandlers.ofString());
    console.interrupt();
    console.result(Duration.ofSeconds(10));

    assertThat(api.statusCode()).isEqualTo(200);
    assertThat(api.body()).contains("\"listedAt\":\"")
        .contains("{\"name\":\"listed-first\",\"instances\":1,\"drained\":0,\"totalWeight\":3,");
  }

  @Test
  void bindingBeyondLoopbackWithoutATokenIsAUsageError() {
    Cli.Result r = Cli.withEndpoints(etcd.endpoints()).run("console", "--bind", "0.0.0.0", "--port", "0");

    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).startsWith(
        "steelyard: bind: 0.0.0.0 is not loopback (expected: --token-file or --tls-cert/--tls-key"
            + " to listen beyond this host)\n");
  }

  @Test
  void anEmptyTokenFileIsAUsageError(@TempDir Path dir) throws Exception {
    Path token = Files.writeString(dir.resolve("token"), "\n");

    Cli.Result r = Cli.withEndpoints(etcd.endpoints())
        .run("console", "--token-file", token.toString(), "--port", "0");

    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).startsWith("steelyard: token-file: " + token + " is empty\n");
  }

  @Test
  void withATokenFileItListensBeyondLoopbackAndRefusesRequestsWithoutIt(@TempDir Path dir)
      throws Exception {
    Path token = Files.writeString(dir.resolve("token"), "a-console-token-of-some-length\n");
    Cli.Running console = Cli.withEndpoints(etcd.endpoints())
        .start("console", "--bind", "0.0.0.0", "--port", "0", "--token-file", token.toString());

    String url = await().atMost(Duration.ofSeconds(20)).until(() -> ready(console.out()), u -> u != null);
    String local = url.replace("0.0.0.0", "127.0.0.1");
    HttpResponse<String> without = http.send(HttpRequest.newBuilder(URI.create(local)).build(),
        HttpResponse.BodyHandlers.ofString());
    HttpResponse<String> with = http.send(HttpRequest.newBuilder(URI.create(local))
        .header("Authorization", "Bearer a-console-token-of-some-length").build(),
        HttpResponse.BodyHandlers.ofString());
    console.interrupt();
    console.result(Duration.ofSeconds(10));

    assertThat(without.statusCode()).isEqualTo(401);
    assertThat(with.statusCode()).isEqualTo(200);
  }

  @Test
  void withTlsItServesHttpsBeyondLoopback() throws Exception {
    TestCertificates certs = TestCertificates.generate();
    Cli.Running console = Cli.withEndpoints(etcd.endpoints()).start("console", "--bind", "0.0.0.0",
        "--port", "0", "--tls-cert", certs.serverCert().toString(),
        "--tls-key", certs.serverKey().toString());

    String url = await().atMost(Duration.ofSeconds(20)).until(() -> ready(console.out()), u -> u != null);
    HttpClient trusting = HttpClient.newBuilder().sslContext(trusting(certs.caCert())).build();
    HttpResponse<String> api = trusting.send(
        HttpRequest.newBuilder(URI.create(url.replace("0.0.0.0", "127.0.0.1") + "api/services")).build(),
        HttpResponse.BodyHandlers.ofString());
    console.interrupt();
    console.result(Duration.ofSeconds(10));

    assertThat(url).startsWith("https://0.0.0.0:");
    assertThat(api.statusCode()).isEqualTo(200);
    assertThat(api.body()).contains("\"prefix\":\"/services\"");
  }

  @Test
  void aTlsCertWithoutItsKeyIsAUsageError() {
    Cli.Result r = Cli.withEndpoints(etcd.endpoints())
        .run("console", "--tls-cert", "console.pem", "--port", "0");

    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).startsWith(
        "steelyard: tls: --tls-cert and --tls-key go together (expected: both or neither)\n");
  }

  /** An SSL context that trusts only the test CA. */
  private static SSLContext trusting(Path caPem) throws Exception {
    Certificate ca;
    try (var in = Files.newInputStream(caPem)) {
      ca = CertificateFactory.getInstance("X.509").generateCertificate(in);
    }
    KeyStore trust = KeyStore.getInstance("PKCS12");
    trust.load(null, null);
    trust.setCertificateEntry("ca", ca);
    TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(trust);
    SSLContext ssl = SSLContext.getInstance("TLS");
    ssl.init(null, tmf.getTrustManagers(), null);
    return ssl;
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }

  private static String ready(String out) {
    Matcher m = READY.matcher(out);
    return m.find() ? m.group(1) : null;
  }
}
