package io.steelyard.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Runs the launcher as a separate JVM, the way scripts do. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EtcdLauncherTest {

  private Process launcher;

  @AfterEach
  void killLauncher() {
    if (launcher != null) {
      launcher.destroyForcibly();
    }
  }

  @Test
  void printsEndpointsThenCleansUpWhenStdinCloses() throws Exception {
    launcher = launch("--members", "1");
    BufferedReader stdout = stdout(launcher);
    List<URI> endpoints = endpoints(stdout.readLine());
    List<ProcessHandle> etcds = etcdProcesses(launcher);
    assertThat(endpoints).singleElement().satisfies(uri -> assertThat(EtcdHttp.isHealthy(uri)).isTrue());
    assertThat(etcds).hasSize(1);

    launcher.getOutputStream().close();

    assertThat(launcher.waitFor(20, TimeUnit.SECONDS)).isTrue();
    assertThat(launcher.exitValue()).isZero();
    assertThat(stdout.readLine()).as("nothing but the endpoints line on stdout").isNull();
    assertThat(etcds).noneMatch(ProcessHandle::isAlive);
    assertThat(EtcdHttp.answers(endpoints.get(0))).isFalse();
  }

  @Test
  void sigkilledLauncherTakesItsEtcdMembersWithIt() throws Exception {
    launcher = launch("--members", "3");
    List<URI> endpoints = endpoints(stdout(launcher).readLine());
    List<ProcessHandle> etcds = etcdProcesses(launcher);
    assertThat(endpoints).hasSize(3);
    assertThat(etcds).hasSize(3);

    Path clusterDir = dataDir(etcds.get(0)).getParent().getParent();
    assertThat(clusterDir).isDirectory();

    launcher.destroyForcibly(); // SIGKILL: no shutdown hook runs, only the watchdogs remain

    Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> etcds.stream().noneMatch(ProcessHandle::isAlive));
    Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> !java.nio.file.Files.exists(clusterDir));
  }

  @Test
  void controlCommandsOnStdinDriveFaultsAndAnswerOneLineEach() throws Exception {
    launcher = launch("--members", "3", "--partitionable", "--control");
    BufferedReader stdout = stdout(launcher);
    List<URI> endpoints = endpoints(stdout.readLine());
    java.io.PrintStream stdin = new java.io.PrintStream(launcher.getOutputStream(), true, StandardCharsets.UTF_8);

    assertThat(command(stdin, stdout, "leader")).matches("OK [012]");
    int leader = Integer.parseInt(command(stdin, stdout, "leader").substring(3));
    assertThat(command(stdin, stdout, "freeze leader")).isEqualTo("OK");
    assertThat(EtcdHttp.answers(endpoints.get(leader))).as("frozen").isFalse();
    assertThat(command(stdin, stdout, "resume " + leader)).isEqualTo("OK");
    assertThat(command(stdin, stdout, "partition 1 everything")).isEqualTo("OK");
    assertThat(EtcdHttp.answers(endpoints.get(1))).as("partitioned from clients").isFalse();
    assertThat(command(stdin, stdout, "heal 1")).isEqualTo("OK");
    assertThat(command(stdin, stdout, "await-healthy 30")).isEqualTo("OK");
    assertThat(command(stdin, stdout, "alarms")).isEqualTo("OK");
    assertThat(command(stdin, stdout, "kill 7")).startsWith("ERR kill: member 7 (expected: 0..2 or leader)");
    assertThat(command(stdin, stdout, "shake 1")).startsWith("ERR unknown command: shake");

    stdin.close();
    assertThat(launcher.waitFor(20, TimeUnit.SECONDS)).isTrue();
    assertThat(launcher.exitValue()).isZero();
  }

  private static String command(java.io.PrintStream stdin, BufferedReader stdout, String line) throws Exception {
    stdin.println(line);
    return stdout.readLine();
  }

  private static Process launch(String... args) throws Exception {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    List<String> command =
        new java.util.ArrayList<>(
            List.of(java.toString(), "-cp", System.getProperty("java.class.path"), EtcdLauncher.class.getName(), "--backend", "binary"));
    command.addAll(Arrays.asList(args));
    return new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
  }

  private static BufferedReader stdout(Process process) {
    return new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
  }

  private static List<URI> endpoints(String line) {
    assertThat(line).startsWith("ETCD_ENDPOINTS=http://127.0.0.1:");
    return Arrays.stream(line.substring("ETCD_ENDPOINTS=".length()).split(",")).map(URI::create).collect(Collectors.toList());
  }

  private static Path dataDir(ProcessHandle etcd) {
    List<String> args = List.of(etcd.info().arguments().orElseThrow());
    return Path.of(args.get(args.indexOf("--data-dir") + 1));
  }

  private static List<ProcessHandle> etcdProcesses(Process process) {
    return process
        .descendants()
        .filter(p -> p.info().command().map(c -> c.endsWith("/etcd")).orElse(false))
        .collect(Collectors.toList());
  }
}
