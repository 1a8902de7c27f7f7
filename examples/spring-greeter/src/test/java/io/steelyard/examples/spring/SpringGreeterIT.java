package io.steelyard.examples.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The executable jar {@code bin/spring-greeter} runs, in a child JVM as a user starts it: the
 * READY line, the key in etcd, the actuator at the printed URL, the client bean's calls through
 * {@code etcd:///greeter}, and SIGTERM's graceful exit that removes the key.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class SpringGreeterIT {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  private static final Pattern READY = Pattern.compile(
      "READY address=(127\\.0\\.0\\.1:\\d+) service=(\\S+) weight=(\\d+) management=(http://127\\.0\\.0\\.1:\\d+)");
  private static final Pattern CALLS = Pattern.compile("CALLS n=10 (\\S+)=(\\d+)");

  private Process process;

  @AfterEach
  void stop() throws InterruptedException {
    if (process != null && process.isAlive()) {
      process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
    }
  }

  private static Path executableJar() throws IOException {
    try (DirectoryStream<Path> jars = Files.newDirectoryStream(Path.of("target"), "spring-greeter-*.jar")) {
      for (Path jar : jars) {
        return jar;
      }
    }
    throw new AssertionError("target/spring-greeter-*.jar missing: run the package phase first");
  }

  @Test
  void printsReadyOnceRegisteredServesTheActuatorCallsThroughEtcdAndDeregistersOnSigterm() throws Exception {
    List<String> cmd = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xmx256m", "-XX:TieredStopAtLevel=1",
        "-jar", executableJar().toString(),
        "--steelyard.etcd.endpoints=" + etcd.endpoints(),
        "--spring.grpc.server.port=0",
        "--management.server.port=0",
        "--steelyard.registration.weight=5",
        "--spring-greeter.calls=10"));
    process = new ProcessBuilder(cmd)
        .redirectError(Path.of("target", "spring-greeter-it.err").toFile())
        .start();
    BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    Thread reader = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(
          new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = r.readLine()) != null; ) {
          lines.add(line);
        }
      } catch (IOException ignored) {
        // The process ended.
      }
    }, "spring-greeter-stdout");
    reader.setDaemon(true);
    reader.start();

    String ready = lines.poll(150, TimeUnit.SECONDS);
    assertThat(ready).as("first stdout line (stderr in target/spring-greeter-it.err)").isNotNull();
    assertThat(ready).as("stdout carries the READY line first").startsWith("READY ");
    Matcher m = READY.matcher(ready);
    assertThat(m.matches()).as(ready).isTrue();
    String address = m.group(1);
    assertThat(m.group(2)).isEqualTo("greeter");
    assertThat(m.group(3)).isEqualTo("5");
    String management = m.group(4);

    String key = "/services/greeter/" + address;
    try (Client client = EtcdConnection.of(etcd.endpoints()).connect()) {
      assertThat(value(client, key)).isEqualTo(address + "|5");

      HttpResponse<String> health = HttpClient.newHttpClient().send(
          HttpRequest.newBuilder(URI.create(management + "/actuator/health/steelyard"))
              .timeout(Duration.ofSeconds(20)).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(health.statusCode()).isEqualTo(200);
      assertThat(health.body()).contains("\"status\":\"UP\"").contains(address);

      String calls = lines.poll(60, TimeUnit.SECONDS);
      assertThat(calls).isNotNull();
      Matcher c = CALLS.matcher(calls);
      assertThat(c.matches()).as(calls).isTrue();
      assertThat(c.group(1)).as("the only greeter registered is this one").isEqualTo(address);

      process.destroy(); // SIGTERM: Spring's shutdown hook closes the context gracefully
      assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("exited after SIGTERM").isTrue();
      await().atMost(Duration.ofSeconds(5)).until(() -> value(client, key) == null);
    }
  }

  private static String value(Client client, String key) throws Exception {
    var kvs = client.getKVClient().get(ByteSequence.from(key, StandardCharsets.UTF_8))
        .get(10, TimeUnit.SECONDS).getKvs();
    return kvs.isEmpty() ? null : kvs.get(0).getValue().toString(StandardCharsets.UTF_8);
  }
}
