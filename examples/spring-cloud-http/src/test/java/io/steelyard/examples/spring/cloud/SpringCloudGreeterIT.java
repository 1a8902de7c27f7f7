package io.steelyard.examples.spring.cloud;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.gson.Gson;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The executable jar {@code bin/spring-cloud-greeter} runs, in child JVMs as a user starts it:
 * two servers (weights 1 and 3) print READY and register, a client's calls through the
 * {@code @LoadBalanced RestClient} reach both and print the JSON line, SIGTERM removes a key, and
 * a bad option exits 2.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class SpringCloudGreeterIT {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  private static final Pattern READY =
      Pattern.compile("READY address=(127\\.0\\.0\\.1:\\d+) management=(http://127\\.0\\.0\\.1:\\d+)");

  private final List<Process> processes = new ArrayList<>();

  record Backend(String address, int calls) {}

  record Result(List<Backend> backends, int failed) {}

  @AfterEach
  void stop() throws InterruptedException {
    for (Process p : processes) {
      if (p.isAlive()) {
        p.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
      }
    }
  }

  @Test
  void twoServersAndAClientSpreadCallsByWeightAndSigtermDeregisters() throws Exception {
    Process one = start("server-1", "--server.port=0", "--steelyard.registration.weight=1");
    Process three = start("server-3", "--server.port=0", "--steelyard.registration.weight=3");
    String a = readyAddress(one);
    String b = readyAddress(three);

    Process client = start("client", "--role=client", "--calls=400", "--target=greeter-http");
    assertThat(client.waitFor(120, TimeUnit.SECONDS)).isTrue();
    String json = new String(client.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
    assertThat(client.exitValue()).as(json).isZero();
    Result result = new Gson().fromJson(json, Result.class);
    Map<String, Integer> calls = result.backends().stream()
        .collect(Collectors.toMap(Backend::address, Backend::calls));
    assertThat(result.failed()).isZero();
    assertThat(calls).containsOnlyKeys(a, b);
    assertThat(calls.get(b)).isBetween(240, 360);

    try (Client reader = EtcdConnection.of(etcd.endpoints()).connect()) {
      ByteSequence key = ByteSequence.from("/services/greeter-http/" + a, StandardCharsets.UTF_8);
      assertThat(reader.getKVClient().get(key).get(10, TimeUnit.SECONDS).getKvs().get(0).getValue()
          .toString(StandardCharsets.UTF_8)).isEqualTo(a + "|1");
      one.destroy(); // SIGTERM
      assertThat(one.waitFor(60, TimeUnit.SECONDS)).isTrue();
      await().atMost(Duration.ofSeconds(5))
          .until(() -> reader.getKVClient().get(key).get(10, TimeUnit.SECONDS).getCount() == 0);
    }
  }

  @Test
  void aBadOptionExitsTwoWithOneLine() throws Exception {
    Process p = start("bad", "--role=client", "--calls=none");
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).isEqualTo(2);
    assertThat(Files.readString(Path.of("target", "spring-cloud-greeter-it-bad.err")))
        .contains("spring-cloud-greeter: --calls: 'none' (expected: a whole number >= 1)");

    Process role = start("role", "--role=proxy");
    assertThat(role.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(role.exitValue()).isEqualTo(2);
  }

  private Process start(String name, String... args) throws IOException {
    List<String> cmd = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xmx256m", "-XX:TieredStopAtLevel=1",
        "-jar", executableJar().toString(),
        "--steelyard.etcd.endpoints=" + etcd.endpoints()));
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd)
        .redirectError(Path.of("target", "spring-cloud-greeter-it-" + name + ".err").toFile())
        .start();
    processes.add(p);
    return p;
  }

  private static String readyAddress(Process p) throws IOException {
    BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    String line;
    while ((line = out.readLine()) != null) {
      Matcher m = READY.matcher(line);
      if (m.matches()) {
        return m.group(1);
      }
    }
    throw new AssertionError("no READY line before the server's stdout closed");
  }

  private static Path executableJar() throws IOException {
    try (DirectoryStream<Path> jars = Files.newDirectoryStream(Path.of("target"), "spring-cloud-http-*.jar")) {
      for (Path jar : jars) {
        return jar;
      }
    }
    throw new AssertionError("target/spring-cloud-http-*.jar missing: run the package phase first");
  }
}
