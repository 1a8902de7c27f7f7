package io.steelyard.gettingstarted;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.FreePorts;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Builds and runs {@code docs/getting-started.md} as a user would: every code block the page marks
 * with {@code <!-- file: PATH -->} is written to an empty folder under {@code
 * target/getting-started}, one Maven project per path (plain server, plain client, Spring Boot),
 * each is built with the project's Maven wrapper, and each runs against a real etcd from the
 * testkit: the server's key appears with its weight and goes at SIGTERM, the client's calls
 * succeed through {@code etcd:///greeter}, and the Spring application registers and its runner's
 * call through etcd is answered. For each path it logs (and appends to {@code
 * target/getting-started/timings.txt}) how long the build and the run took from the empty folder.
 *
 * <p><b>Where the steelyard artifacts come from.</b> The consumer projects import {@code
 * steelyard-bom} and depend on steelyard's published artifacts like any application, so those
 * must be installed first: {@code scripts/test} runs {@code ./mvnw -B -Prelease install}, and this
 * module comes last in the reactor and depends on every published module (dependencies that only
 * order the build; their jars do not reach this module's classpath), so by its
 * integration-test phase every one of them, the parent POM and the BOM are in the local repository.
 * Failsafe passes that repository as {@code steelyard.localRepository} ({@code
 * ${settings.localRepository}}, so {@code -Dmaven.repo.local=...} on the reactor's command line
 * reaches the consumers too); without it, {@code ~/.m2/repository}.
 *
 * <p><b>Offline or not.</b> The consumer builds pass {@code -nsu}: steelyard's SNAPSHOTs come only
 * from that local repository, never from a remote one. They run online by default, because a
 * consumer resolves some third-party versions the reactor never needed (steelyard's own builds
 * pin versions for convergence that an application does not inherit), and a fresh CI repository
 * does not hold them until the first run. {@code -Dsteelyard.gettingStarted.offline=true} adds
 * {@code -o}, for a repository that already holds them (any machine after one run).
 */
@Timeout(value = 15, unit = TimeUnit.MINUTES)
class GettingStartedIT {

  private static final Logger logger = LoggerFactory.getLogger(GettingStartedIT.class);

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  private static final Path ROOT =
      Path.of(System.getProperty("steelyard.rootDirectory", "..")).toAbsolutePath().normalize();
  private static final Path REPOSITORY = Path.of(System.getProperty("steelyard.localRepository",
      Path.of(System.getProperty("user.home"), ".m2", "repository").toString()));
  private static final boolean OFFLINE = Boolean.getBoolean("steelyard.gettingStarted.offline");
  private static final Path WORK = ROOT.resolve("getting-started/target/getting-started");
  private static final Path JAVA = Path.of(System.getProperty("java.home"), "bin", "java");
  private static final Duration BUILD_TIMEOUT = Duration.ofMinutes(5);
  /**
   * How long one read of etcd may take. A reachable etcd answers in milliseconds, but on a 2-core
   * machine that also runs the consumers' Maven builds and other builds, a read was seen to take
   * over 10 s; the test waits on the read, not on a guess of the machine's speed.
   */
  private static final Duration READ_TIMEOUT = Duration.ofSeconds(60);
  /**
   * The Spring application's {@code steelyard.registration.await-on-startup}, set by this test for
   * itself. The page keeps the default (5 s, for an etcd that takes the key in milliseconds); on a
   * 2-core machine loaded by other builds as well (load average 25), the application took over a
   * minute from its start to its gRPC server's, and etcd's lease grants timed out for tens of
   * seconds, so a 5 s or 60 s bound failed the startup as it should.
   */
  private static final Duration AWAIT_ON_STARTUP = Duration.ofMinutes(5);
  /**
   * How long a started process may take to do what the page says (register, answer): the Spring
   * application's start and its startup wait included, within the class timeout.
   */
  private static final Duration RUN_TIMEOUT = Duration.ofMinutes(8);
  private static final String KEYS = "/services/greeter/";

  private static Client client;
  private final List<Process> processes = new ArrayList<>();

  @BeforeAll
  static void writeThePagesFilesIntoEmptyFolders() throws IOException {
    Map<String, String> files = DocFiles.read(ROOT.resolve("docs/getting-started.md"));
    assertThat(files).containsKeys("server/pom.xml", "client/pom.xml", "spring/pom.xml",
        "server/src/main/proto/greeter.proto", "client/src/main/proto/greeter.proto",
        "spring/src/main/proto/greeter.proto");
    deleteRecursively(WORK);
    Files.createDirectories(WORK);
    DocFiles.write(files, WORK);
    client = EtcdConnection.of(etcd.endpoints()).connect();
  }

  @AfterAll
  static void disconnect() {
    if (client != null) {
      client.close();
    }
  }

  @AfterEach
  void stopWhatIsLeft() {
    processes.forEach(Process::destroyForcibly);
  }

  @Test
  void thePlainServerRegistersAndThePlainClientsCallsAreAnswered() throws Exception {
    Path server = WORK.resolve("server");
    long serverStart = System.nanoTime();
    build(server);
    long serverBuilt = System.nanoTime();
    int port = FreePorts.one();
    String address = "127.0.0.1:" + port;
    Process s = start(server, List.of(
        JAVA.toString(), "-cp", classpath(server), "com.example.greeter.GreeterServer", "" + port));
    awaitUntil(s, server, () -> (address + "|5").equals(valueOf(KEYS + address)));
    long registered = System.nanoTime();
    report("plain grpc-java server", serverStart, serverBuilt, registered, "its key is in etcd");
    // The line follows etcd's answer to the put: it may come just after the key is seen.
    String registeredLine =
        "Registered greeter at " + address + " in etcd as " + KEYS + address + " with weight 5";
    awaitUntil(s, server, () -> output(server).contains(registeredLine));

    Path client = WORK.resolve("client");
    long clientStart = System.nanoTime();
    build(client);
    long clientBuilt = System.nanoTime();
    Process c = start(client, List.of(
        JAVA.toString(), "-cp", classpath(client), "com.example.greeter.GreeterClient"));
    assertThat(c.waitFor(RUN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)).as("client exits").isTrue();
    long answered = System.nanoTime();
    assertThat(c.exitValue()).as("client output:%n%s", tail(client)).isZero();
    report("plain grpc-java client", clientStart, clientBuilt, answered, "5 calls answered");
    assertThat(output(client).lines().filter(l -> l.startsWith("Hello ")))
        .containsExactly(repeat("Hello world from " + address, 5));

    s.destroy(); // SIGTERM: the shutdown hook deregisters before the server stops
    assertThat(s.waitFor(1, TimeUnit.MINUTES)).as("server exits on SIGTERM").isTrue();
    assertThat(valueOf(KEYS + address)).isNull();
    assertThat(output(server)).contains("Deregistered greeter at " + address);
  }

  @Test
  void theSpringApplicationRegistersAndItsRunnersCallThroughEtcdIsAnswered() throws Exception {
    Path spring = WORK.resolve("spring");
    long start = System.nanoTime();
    build(spring);
    long built = System.nanoTime();
    Process app = start(spring, List.of(JAVA.toString(), "-jar", "target/greeter-spring-1.0.jar",
        "--spring.grpc.server.port=0", "--spring.grpc.server.host=127.0.0.1",
        "--steelyard.registration.drain-delay=0s",
        "--steelyard.registration.await-on-startup=" + AWAIT_ON_STARTUP.toSeconds() + "s"));
    awaitUntil(app, spring, () -> output(spring).contains("The greeter answered: Hello spring"));
    long answered = System.nanoTime();
    report("Spring Boot server and client", start, built, answered, "its runner's call is answered");
    List<KeyValue> keys = keysUnder(KEYS);
    assertThat(keys).hasSize(1);
    String address = keys.get(0).getKey().toString(UTF_8).substring(KEYS.length());
    assertThat(keys.get(0).getValue().toString(UTF_8)).isEqualTo(address + "|5");
    assertThat(output(spring))
        .contains("Registered greeter at " + address + " in etcd as " + KEYS + address + " with weight 5")
        .doesNotContain("The greeter answered: Hello spring from");

    app.destroy();
    assertThat(app.waitFor(1, TimeUnit.MINUTES)).as("application exits on SIGTERM").isTrue();
    assertThat(keysUnder(KEYS)).isEmpty();
    assertThat(output(spring)).contains("Deregistered greeter at " + address);
  }

  private static void build(Path project) throws Exception {
    List<String> command = new ArrayList<>(List.of(ROOT.resolve("mvnw").toString(), "-B", "-q",
        "-nsu", "-Dmaven.repo.local=" + REPOSITORY, "package"));
    if (OFFLINE) {
      command.add(1, "-o");
    }
    Path log = WORK.resolve(project.getFileName() + "-build.log");
    Process p = new ProcessBuilder(command).directory(project.toFile())
        .redirectErrorStream(true).redirectOutput(log.toFile()).start();
    if (!p.waitFor(BUILD_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
      p.destroyForcibly();
      fail("building " + project + " took over " + BUILD_TIMEOUT + "; see " + log);
    }
    assertThat(p.exitValue()).as("%s failed:%n%s", String.join(" ", command), lastLines(log))
        .isZero();
  }

  private Process start(Path project, List<String> command) throws IOException {
    ProcessBuilder b = new ProcessBuilder(command).directory(project.toFile())
        .redirectErrorStream(true).redirectOutput(runLog(project).toFile());
    b.environment().put(EtcdConnection.ENDPOINTS_ENV, etcd.endpoints());
    Process p = b.start();
    processes.add(p);
    return p;
  }

  /** Waits for {@code done}, failing at once with the output when the process ends first. */
  private static void awaitUntil(Process p, Path project, java.util.concurrent.Callable<Boolean> done) {
    await().atMost(RUN_TIMEOUT).pollInterval(Duration.ofMillis(100)).until(() -> {
      if (done.call()) {
        return true;
      }
      if (!p.isAlive()) {
        fail("%s exited with %d:%n%s", project.getFileName(), p.exitValue(), tail(project));
      }
      return false;
    });
  }

  private static String classpath(Path project) throws IOException {
    return project.resolve("target/classes") + java.io.File.pathSeparator
        + Files.readString(project.resolve("target/classpath.txt")).trim();
  }

  private static String valueOf(String key) throws Exception {
    List<KeyValue> kvs = client.getKVClient().get(ByteSequence.from(key, UTF_8))
        .get(READ_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).getKvs();
    return kvs.isEmpty() ? null : kvs.get(0).getValue().toString(UTF_8);
  }

  private static List<KeyValue> keysUnder(String prefix) throws Exception {
    ByteSequence p = ByteSequence.from(prefix, UTF_8);
    return client.getKVClient().get(p, GetOption.builder().isPrefix(true).build())
        .get(READ_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).getKvs();
  }

  private static void report(String path, long start, long built, long works, String check)
      throws IOException {
    String line = String.format(java.util.Locale.ROOT,
        "%s: %.1f s from an empty folder (build %.1f s, then %.1f s until %s)", path,
        (works - start) / 1e9, (built - start) / 1e9, (works - built) / 1e9, check);
    logger.info("getting-started: {}", line);
    Files.writeString(WORK.resolve("timings.txt"), line + System.lineSeparator(), UTF_8,
        StandardOpenOption.CREATE, StandardOpenOption.APPEND);
  }

  private static Path runLog(Path project) {
    return WORK.resolve(project.getFileName() + "-run.log");
  }

  private static String output(Path project) throws IOException {
    Path log = runLog(project);
    return Files.exists(log) ? Files.readString(log) : "";
  }

  private static String tail(Path project) {
    return lastLines(runLog(project));
  }

  private static String lastLines(Path log) {
    try {
      List<String> lines = Files.readAllLines(log);
      return String.join(System.lineSeparator(), lines.subList(Math.max(0, lines.size() - 60), lines.size()));
    } catch (IOException e) {
      return "(no output: " + e + ")";
    }
  }

  private static String[] repeat(String s, int n) {
    return Stream.generate(() -> s).limit(n).toArray(String[]::new);
  }

  private static void deleteRecursively(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(dir)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }
}
