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
import javax.annotation.Nullable;

/**
 * The steelyard binaries (greeter-server, greeter-client, the CLI) as child JVMs with the same
 * etcd flags an operator would give them, their stdout and stderr kept in files for checks.
 */
final class Children implements AutoCloseable {

  static final String SERVER = "io.steelyard.examples.GreeterServerMain";
  static final String CLIENT = "io.steelyard.examples.GreeterClientMain";
  static final String CLI = Cli.MAIN;

  private static final Pattern READY = Pattern.compile("READY address=(\\S+) ");

  /** java.util.logging's SimpleFormatter: "Dec 01, 2026 11:29:44 AM io.grpc..." then "WARNING: ...". */
  static final Pattern JUL_LINE =
      Pattern.compile("(?m)^([A-Z][a-z]{2} \\d{1,2}, \\d{4} \\d{1,2}:\\d{2}:\\d{2} [AP]M |(SEVERE|WARNING|INFO|CONFIG|FINE): )");

  private final Path dir;
  private final List<String> etcdFlags;
  private final List<Child> started = new ArrayList<>();

  /** Children that reach etcd at {@code etcd}'s endpoints, with TLS flags if {@code certs} is given. */
  Children(Path dir, EtcdCluster etcd, @Nullable TestCertificates certs) {
    this.dir = dir;
    List<String> flags = new ArrayList<>(List.of("--endpoints", etcd.endpoints()));
    if (certs != null) {
      flags.addAll(List.of(
          "--cacert", certs.caCert().toString(),
          "--cert", certs.clientCert().toString(),
          "--key", certs.clientKey().toString()));
    }
    this.etcdFlags = List.copyOf(flags);
  }

  /** The least-privilege users of docs/security.md: greeter (server role), caller (client), operator. */
  static void addSteelyardUsers(EtcdCluster etcd) {
    etcd.authAdmin()
        .addRole("steelyard-server-greeter", EtcdAuthAdmin.Access.READWRITE, "/services/greeter/", "/services/.drained/greeter/")
        .addRole("steelyard-client", EtcdAuthAdmin.Access.READ, "/services/")
        .addRole("steelyard-operator", EtcdAuthAdmin.Access.READWRITE, "/services/")
        .addUser("greeter", "greeterpw", "steelyard-server-greeter")
        .addUser("caller", "callerpw", "steelyard-client")
        .addUser("operator", "operatorpw", "steelyard-operator");
  }

  /** Starts {@code main} with the etcd flags, {@code --user user} and {@code args}. */
  Child start(String main, String user, String... args) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-Xmx128m");
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(main);
    cmd.addAll(etcdFlags);
    cmd.addAll(List.of("--user", user));
    if (main.equals(CLI) && !List.of(args).contains("--timeout")) {
      // As in Cli: a cold JVM doing TLS on a loaded 2-core box was seen to need more than the
      // default 5 s for its first etcd call. A refusal still comes as soon as etcd answers.
      cmd.addAll(List.of("--timeout", "30s"));
    }
    cmd.addAll(List.of(args));
    Path out = Files.createTempFile(dir, "child", ".out");
    Path err = Files.createTempFile(dir, "child", ".err");
    Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    Child child = new Child(String.join(" ", cmd.subList(5, cmd.size())), p, out, err);
    started.add(child);
    return child;
  }

  /** Starts a greeter server as user {@code greeter} and waits for its READY line. */
  Child server(String service, int weight) throws IOException {
    Child server = start(SERVER, "greeter:greeterpw", "--service", service, "--port", "0", "--weight", Integer.toString(weight));
    await().atMost(Duration.ofSeconds(60)).until(() -> server.address() != null || !server.process().isAlive());
    assertThat(server.address()).as(server.describe()).isNotNull();
    return server;
  }

  /** Runs a command to completion (bounded) and returns it. */
  Child run(String main, String user, String... args) throws IOException, InterruptedException {
    Child c = start(main, user, args);
    if (!c.process().waitFor(90, TimeUnit.SECONDS)) {
      c.process().destroyForcibly();
      throw new AssertionError("no exit after 90 s: " + c.describe());
    }
    return c;
  }

  List<Child> started() {
    return List.copyOf(started);
  }

  @Override
  public void close() throws InterruptedException {
    for (Child c : started) {
      c.process().destroyForcibly();
      c.process().waitFor(10, TimeUnit.SECONDS);
    }
  }

  record Child(String command, Process process, Path stdout, Path stderr) {
    String out() throws IOException {
      return Files.readString(stdout, UTF_8);
    }

    String err() throws IOException {
      return Files.readString(stderr, UTF_8);
    }

    int exitCode() {
      return process.exitValue();
    }

    @Nullable
    String address() throws IOException {
      Matcher m = READY.matcher(out());
      return m.find() ? m.group(1) : null;
    }

    String describe() throws IOException {
      return command + "\nstdout:\n" + out() + "\nstderr:\n" + err();
    }
  }
}
