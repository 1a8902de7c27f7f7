package io.steelyard.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.steelyard.testkit.EtcdCluster;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** The {@code register} sidecar as an operator runs it: a process of its own, stopped by a signal. */
@Timeout(90)
class RegisterSidecarIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private static Client client;
  private static Keyspace keys;

  @TempDir Path dir;
  private final List<Process> started = new ArrayList<>();

  @BeforeAll
  static void connect() {
    client = Client.builder().endpoints(etcd.endpoints()).build();
    keys = new Keyspace(client);
  }

  @AfterAll
  static void disconnect() {
    client.close();
  }

  @AfterEach
  void killLeftovers() {
    started.forEach(Process::destroyForcibly);
  }

  @Test
  void registeredWhileRunningAndGoneAtOnceAfterSigterm() throws Exception {
    String key = "/services/sigterm/10.0.0.7:50051";
    Process sidecar =
        sidecar("register", "sigterm", "10.0.0.7:50051", "--weight", "5", "--ttl", "30s",
            "--meta", "version=2", "--zone", "eu-1a", "--region", "eu-1");
    awaitRegistered(sidecar, key);

    assertThat(keys.value(key))
        .isEqualTo("{\"Op\":0,\"Addr\":\"10.0.0.7:50051\",\"Metadata\":"
            + "{\"region\":\"eu-1\",\"version\":\"2\",\"weight\":5,\"zone\":\"eu-1a\"}}");
    assertThat(keys.get(key).orElseThrow().getLease()).isNotZero();

    sidecar.destroy(); // SIGTERM
    assertThat(sidecar.waitFor(15, TimeUnit.SECONDS)).as("sidecar exited").isTrue();

    assertThat(sidecar.exitValue()).as(output()).isZero();
    assertThat(keys.get(key)).as("key gone at once, not after the 30s TTL").isEmpty();
    assertThat(stdout()).contains("registered " + key).contains("deregistered " + key);
  }

  @Test
  void ctrlCDeregistersToo() throws Exception {
    String key = "/services/sigint/10.0.0.7:50051";
    Process sidecar = sidecar("register", "sigint", "10.0.0.7:50051", "--ttl", "30s");
    awaitRegistered(sidecar, key);

    new ProcessBuilder("kill", "-INT", Long.toString(sidecar.pid())).start().waitFor();
    assertThat(sidecar.waitFor(15, TimeUnit.SECONDS)).as("sidecar exited").isTrue();

    assertThat(sidecar.exitValue()).as(output()).isZero();
    assertThat(keys.get(key)).isEmpty();
  }

  @Test
  void weightSetKeepsTheSidecarsLeaseAndTheKeyExpiresWhenTheSidecarIsKilled() throws Exception {
    String key = "/services/killed/10.0.0.7:50051";
    Process sidecar = sidecar("register", "killed", "10.0.0.7:50051", "--weight", "5", "--ttl", "2s");
    awaitRegistered(sidecar, key);
    long lease = keys.get(key).orElseThrow().getLease();

    Cli.Result r =
        Cli.withEndpoints(etcd.endpoints()).run("weight", "set", "killed", "10.0.0.7:50051", "9");

    assertThat(r.exitCode()).as(r.toString()).isZero();
    KeyValue after = keys.get(key).orElseThrow();
    assertThat(after.getLease()).isEqualTo(lease);
    assertThat(Keyspace.text(after.getValue())).isEqualTo("10.0.0.7:50051|9");

    sidecar.destroyForcibly(); // SIGKILL: no revoke, only the lease's TTL can remove the key
    assertThat(sidecar.waitFor(15, TimeUnit.SECONDS)).isTrue();
    await()
        .atMost(Duration.ofSeconds(10))
        .pollInterval(Duration.ofMillis(200))
        .until(() -> keys.get(key).isEmpty());
  }

  private void awaitRegistered(Process sidecar, String key) {
    await()
        .atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(100))
        .failFast(
            () -> {
              if (!sidecar.isAlive()) {
                throw new AssertionError(
                    "sidecar exited early (exit " + sidecar.exitValue() + "):\n" + output());
              }
            })
        .until(() -> keys.get(key).isPresent() && stdout().contains("registered " + key));
  }

  private Process sidecar(String... args) throws IOException {
    List<String> command = new ArrayList<>();
    // Ctrl-C as a terminal delivers it: a build started in the background by a shell without job
    // control inherits SIGINT ignored, and a JVM keeps an ignored SIGINT ignored (no shutdown
    // hook runs), so the sidecar gets SIGINT's default back first (GNU env, coreutils >= 8.31).
    command.addAll(List.of("env", "--default-signal=INT"));
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(SteelyardCli.class.getName());
    command.add("--endpoints");
    command.add(etcd.endpoints());
    // A cold JVM on a loaded 2-core box can take longer than the 5s default to register.
    command.add("--timeout");
    command.add("20s");
    command.addAll(List.of(args));
    Process p =
        new ProcessBuilder(command)
            .redirectOutput(dir.resolve("out.txt").toFile())
            .redirectError(dir.resolve("err.txt").toFile())
            .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
            .start();
    started.add(p);
    return p;
  }

  private String stdout() {
    return read("out.txt");
  }

  private String output() {
    return "stdout:\n" + read("out.txt") + "\nstderr:\n" + read("err.txt");
  }

  private String read(String name) {
    try {
      Path p = dir.resolve(name);
      return Files.exists(p) ? Files.readString(p) : "";
    } catch (IOException e) {
      return "(unreadable: " + e + ")";
    }
  }
}
