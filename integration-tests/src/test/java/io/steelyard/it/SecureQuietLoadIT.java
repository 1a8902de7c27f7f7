package io.steelyard.it;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.steelyard.testkit.EtcdAuthAdmin;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.TestCertificates;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every binary against a 3-member etcd with mutual TLS and auth, each with its least-privilege
 * user: two greeter servers (server role of {@code greeter}), greeter-client (client role) and
 * {@code steelyard watch} and {@code list} (operator role). Then a minute of load, after which no
 * process has logged etcd's {@code GOAWAY ENHANCE_YOUR_CALM too_many_pings} or a
 * java.util.logging-formatted line.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class SecureQuietLoadIT {

  @TempDir static Path dir;
  private static final TestCertificates certs = TestCertificates.generate(dir());

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().members(3).mutualTls(certs).rootPassword("rootpw").build();

  /** Long enough for three 10 s keepalive strikes on an idle connection, with slack. */
  private static final Duration LOAD = Duration.ofSeconds(50);

  /** java.util.logging's SimpleFormatter: "Dec 01, 2026 11:29:44 AM io.grpc..." then "WARNING: ...". */
  private static final Pattern JUL_LINE =
      Pattern.compile("(?m)^([A-Z][a-z]{2} \\d{1,2}, \\d{4} \\d{1,2}:\\d{2}:\\d{2} [AP]M |(SEVERE|WARNING|INFO|CONFIG|FINE): )");

  private static final Pattern READY = Pattern.compile("READY address=(\\S+) ");

  private final List<Process> children = new ArrayList<>();
  private final List<Path> logs = new ArrayList<>();

  private static Path dir() {
    try {
      return Files.createTempDirectory("steelyard-pki");
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  @AfterEach
  void stopChildren() throws InterruptedException {
    for (Process p : children) {
      p.destroyForcibly();
      p.waitFor(10, TimeUnit.SECONDS);
    }
  }

  @Test
  void everyBinaryWorksOverMutualTlsWithItsRoleAndNothingLogsTooManyPings() throws Exception {
    etcd.authAdmin()
        .addRole("steelyard-server-greeter", EtcdAuthAdmin.Access.READWRITE, "/services/greeter/", "/services/.drained/greeter/")
        .addRole("steelyard-client", EtcdAuthAdmin.Access.READ, "/services/")
        .addRole("steelyard-operator", EtcdAuthAdmin.Access.READWRITE, "/services/")
        .addUser("greeter", "greeterpw", "steelyard-server-greeter")
        .addUser("caller", "callerpw", "steelyard-client")
        .addUser("operator", "operatorpw", "steelyard-operator");

    Child serverA = startServer("1");
    Child serverB = startServer("3");
    String a = serverA.address();
    String b = serverB.address();

    Child watch = start("io.steelyard.agent.cli.SteelyardCli", security("operator:operatorpw", "watch", "greeter"));
    Child list = start("io.steelyard.agent.cli.SteelyardCli", security("operator:operatorpw", "list", "greeter"));
    assertThat(list.process.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(list.process.exitValue()).as(list.describe()).isZero();
    assertThat(list.out()).contains(a).contains(b);

    Child shortRun = start("io.steelyard.examples.GreeterClientMain",
        security("caller:callerpw", "--service", "greeter", "--requests", "400", "--warmup", "10s"));
    assertThat(shortRun.process.waitFor(90, TimeUnit.SECONDS)).isTrue();
    assertThat(shortRun.process.exitValue()).as(shortRun.describe()).isZero();
    assertThat(shortRun.out()).contains(a).contains(b).contains("400 ok");

    Child load = start("io.steelyard.examples.GreeterClientMain",
        security("caller:callerpw", "--service", "greeter", "--requests", "100000000", "--concurrency", "2",
            "--warmup", "0s"));
    await("a minute of load with every process alive")
        .during(LOAD)
        .atMost(LOAD.plusSeconds(10))
        .until(() -> List.of(load, watch, serverA, serverB).stream().allMatch(c -> c.process.isAlive()));

    for (Path log : logs) {
      String text = Files.readString(log, UTF_8);
      assertThat(text).as(log.toString()).doesNotContain("too_many_pings").doesNotContain("ENHANCE_YOUR_CALM");
      Matcher jul = JUL_LINE.matcher(text);
      assertThat(jul.find()).as("a java.util.logging line in %s: %s", log, text).isFalse();
    }
  }

  private Child startServer(String weight) throws Exception {
    Child server = start("io.steelyard.examples.GreeterServerMain",
        security("greeter:greeterpw", "--service", "greeter", "--port", "0", "--weight", weight));
    await().atMost(Duration.ofSeconds(60)).until(() -> READY.matcher(server.out()).find() || !server.process.isAlive());
    assertThat(READY.matcher(server.out()).find()).as(server.describe()).isTrue();
    return server;
  }

  private static String[] security(String user, String... args) {
    List<String> all = new ArrayList<>(List.of(
        "--endpoints", etcd.endpoints(),
        "--cacert", certs.caCert().toString(),
        "--cert", certs.clientCert().toString(),
        "--key", certs.clientKey().toString(),
        "--user", user));
    all.addAll(List.of(args));
    return all.toArray(String[]::new);
  }

  private Child start(String main, String... args) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx128m");
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(main);
    cmd.addAll(List.of(args));
    Path out = Files.createTempFile(dir, "child", ".out");
    Path err = Files.createTempFile(dir, "child", ".err");
    Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    children.add(p);
    logs.add(out);
    logs.add(err);
    return new Child(main + " " + String.join(" ", args), p, out, err);
  }

  private record Child(String command, Process process, Path stdout, Path stderr) {
    String out() throws IOException {
      return Files.readString(stdout, UTF_8);
    }

    String address() throws IOException {
      Matcher m = READY.matcher(out());
      return m.find() ? m.group(1) : null;
    }

    String describe() throws IOException {
      return command + "\nstdout:\n" + out() + "\nstderr:\n" + Files.readString(stderr, UTF_8);
    }
  }
}
