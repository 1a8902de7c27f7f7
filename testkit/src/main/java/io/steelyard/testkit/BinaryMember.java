package io.steelyard.testkit;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One etcd process started from the local binary, under a {@code /bin/sh} watchdog that SIGKILLs
 * etcd as soon as the test JVM is gone, so even a {@code kill -9} of the JVM leaves nothing behind.
 * Signals for {@link #stop()}/{@link #kill()} go to the real etcd PID, which the watchdog reports
 * on its stdout; the watchdog exits right after etcd does.
 */
final class BinaryMember implements EtcdMember {

  private static final Logger log = LoggerFactory.getLogger(BinaryMember.class);

  /**
   * $1 = PID of the JVM never to outlive, $2 = log file, $3 = member directory, rest = etcd command
   * line. A background subshell polls the JVM once a second (cheap on a shared 2-core box) and
   * SIGKILLs etcd when the JVM is gone; the foreground {@code wait} makes the watchdog exit as soon
   * as etcd does. If the JVM died, nobody else will delete the member directory (and the cluster
   * directory once it is empty), so the watchdog does.
   */
  static final String WATCHDOG = // also starts EtcdGrpcProxy
      "jvm=$1; log=$2; dir=$3; shift 3\n"
          + "\"$@\" </dev/null >>\"$log\" 2>&1 &\n"
          + "child=$!\n"
          + "echo \"$child\"\n"
          + "( while kill -0 \"$jvm\" 2>/dev/null; do sleep 1; done; kill -9 \"$child\" 2>/dev/null )"
          + " </dev/null >/dev/null 2>&1 &\n"
          + "watcher=$!\n"
          + "trap 'kill -9 \"$child\" 2>/dev/null' HUP INT TERM\n"
          + "wait \"$child\"; rc=$?\n"
          + "kill \"$watcher\" 2>/dev/null\n"
          + "if ! kill -0 \"$jvm\" 2>/dev/null; then rm -rf \"$dir\"; rmdir \"${dir%/*}\" 2>/dev/null; fi\n"
          + "exit $rc\n";

  static final Duration START_TIMEOUT = Duration.ofSeconds(60);
  private static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);
  private static final int LOG_TAIL_LINES = 40;

  private final String name;
  private final Path dir;
  private final BinaryClusterBackend cluster;
  private volatile int clientPort;
  private volatile int peerPort;
  private volatile int probePort; // 0 unless the client port speaks TLS
  // Written under this; volatile so isRunning() needs no lock (members check each other's state).
  private volatile Process watchdog;
  private volatile long etcdPid;
  private volatile ProcessHandle etcd; // null if etcd exited before we looked it up
  // Fault tools: proxies in front of the ports (null unless the cluster is partitionable).
  private volatile FaultProxy clientProxy;
  private volatile FaultProxy peerProxy;
  private volatile Partition partition; // null: not partitioned
  private volatile boolean exitExpected; // set by stop()/kill(), so an exit on its own is reported

  BinaryMember(String name, Path dir, BinaryClusterBackend cluster) {
    this.name = name;
    this.dir = dir;
    this.cluster = cluster;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public URI clientEndpoint() {
    FaultProxy proxy = clientProxy;
    return proxy != null ? proxy.uri(scheme()) : directClientEndpoint();
  }

  /** The port etcd itself listens on for clients, behind the fault proxy if there is one. */
  URI directClientEndpoint() {
    return URI.create(scheme() + "://127.0.0.1:" + clientPort);
  }

  private String scheme() {
    return cluster.tls() ? "https" : "http";
  }

  /**
   * Where the testkit probes health and leadership and sets up auth: etcd's own client port
   * (never through a fault proxy, so a partition does not blind the testkit), or with TLS a
   * second, plain client listener on loopback (never advertised), so probes need no
   * certificates.
   */
  URI probeEndpoint() {
    return probePort == 0 ? directClientEndpoint() : URI.create("http://127.0.0.1:" + probePort);
  }

  /** The peer URL the member advertises and its peers dial: the fault proxy's if there is one. */
  URI peerUrl() {
    FaultProxy proxy = peerProxy;
    return proxy != null ? proxy.uri("http") : listenPeerUrl();
  }

  /** The peer URL etcd itself listens on. */
  URI listenPeerUrl() {
    return URI.create("http://127.0.0.1:" + peerPort);
  }

  void attachProxies(FaultProxy client, FaultProxy peer) {
    this.clientProxy = client;
    this.peerProxy = peer;
  }

  /** The proxies in front of this member's client and peer ports, if the cluster is partitionable. */
  List<FaultProxy> proxies() {
    FaultProxy c = clientProxy;
    FaultProxy p = peerProxy;
    return c == null ? List.of() : List.of(c, p);
  }

  void assignPorts(int client, int peer, int probe) {
    this.clientPort = client;
    this.peerPort = peer;
    this.probePort = probe;
  }

  Path dir() {
    return dir;
  }

  Path dataDir() {
    return dir.resolve("data");
  }

  Path logFile() {
    return dir.resolve("etcd.log");
  }

  /** PID of the etcd process itself, if one was started. */
  Optional<Long> pid() {
    return watchdog == null ? Optional.empty() : Optional.of(etcdPid);
  }

  /** PID of the watchdog shell, if one was started. */
  Optional<Long> watchdogPid() {
    return Optional.ofNullable(watchdog).map(Process::pid);
  }

  @Override
  public boolean isRunning() {
    Process w = watchdog;
    ProcessHandle e = etcd;
    return w != null && w.isAlive() && e != null && e.isAlive();
  }

  @Override
  public synchronized void stop() {
    if (!isRunning()) {
      return;
    }
    if (isFrozen()) {
      signal("CONT"); // a stopped process keeps SIGTERM pending until it runs again
    }
    exitExpected = true;
    log.debug("stopping {} (pid {})", name, etcd.pid());
    etcd.destroy();
    if (!awaitExit(STOP_TIMEOUT)) {
      log.warn("{} ignored SIGTERM for {}; killing it", name, STOP_TIMEOUT);
      etcd.destroyForcibly();
      awaitExit(STOP_TIMEOUT);
    }
  }

  @Override
  public synchronized void kill() {
    if (!isRunning()) {
      return;
    }
    exitExpected = true;
    log.debug("killing {} (pid {})", name, etcd.pid());
    etcd.destroyForcibly();
    if (!awaitExit(STOP_TIMEOUT)) {
      throw new IllegalStateException(name + " (pid " + etcd.pid() + ") still alive after SIGKILL");
    }
  }

  @Override
  public synchronized void start() {
    if (isRunning()) {
      return;
    }
    if (cluster.isClosed()) {
      throw new IllegalStateException("etcd member " + name + " belongs to a closed cluster");
    }
    // Decided before launch, which would make this member count itself among the running ones.
    BooleanSupplier ready =
        cluster.quorumRunning()
            ? () -> EtcdHttp.isHealthy(probeEndpoint())
            : () -> EtcdHttp.listening(probeEndpoint());
    launch();
    try {
      awaitReady(ready);
    } catch (RuntimeException e) {
      kill();
      throw e;
    }
    log.debug("{} serves on {}", name, clientEndpoint());
  }

  @Override
  public void restart() {
    stop();
    start();
  }

  @Override
  public synchronized void freeze() {
    if (!isRunning()) {
      throw new IllegalStateException("freeze: etcd member " + name + " is not running");
    }
    signal("STOP");
    EtcdHttp.await(name + " frozen", this::isFrozen, this::isRunning, STOP_TIMEOUT, () -> "");
    log.debug("froze {} (pid {})", name, etcdPid);
  }

  @Override
  public synchronized void resume() {
    if (!isRunning() || !isFrozen()) {
      return;
    }
    signal("CONT");
    EtcdHttp.await(name + " resumed", () -> !isFrozen(), this::isRunning, STOP_TIMEOUT, () -> "");
    log.debug("resumed {} (pid {})", name, etcdPid);
  }

  /** Whether the process is stopped by a signal: state {@code T} in {@code /proc/PID/stat}. */
  @Override
  public boolean isFrozen() {
    if (!isRunning()) {
      return false;
    }
    try {
      String stat = Files.readString(Path.of("/proc", Long.toString(etcdPid), "stat"), StandardCharsets.US_ASCII);
      // "PID (comm) S ...": the state follows the last ')', since comm may hold spaces or parens.
      int close = stat.lastIndexOf(')');
      return close > 0 && close + 2 < stat.length() && stat.charAt(close + 2) == 'T';
    } catch (IOException | UncheckedIOException e) {
      return false;
    }
  }

  @Override
  public void partition(Partition how) {
    Objects.requireNonNull(how, "how");
    if (clientProxy == null) {
      throw new IllegalStateException(
          "partition: etcd member " + name + " has no fault proxies; build the cluster with partitionable()");
    }
    partition = how;
    cluster.recheckProxies();
    log.debug("partitioned {} {}", name, how);
  }

  @Override
  public void heal() {
    partition = null;
    cluster.recheckProxies();
    log.debug("healed {}", name);
  }

  @Override
  public Optional<Partition> partitioned() {
    return Optional.ofNullable(partition);
  }

  @Override
  public double metric(String name, String... labelPairs) {
    return EtcdGateway.metric(directClientEndpoint(), name, labelPairs);
  }

  private void signal(String signal) {
    try {
      Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(etcdPid))
          .redirectErrorStream(true)
          .start();
      String out = new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
      if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
        throw new IllegalStateException("kill -" + signal + " " + etcdPid + " (" + name + ") failed: " + out);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot signal etcd member " + name, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while signalling " + name, e);
    }
  }

  /** Starts the process without waiting for it to serve. */
  synchronized void launch() {
    if (isRunning()) {
      return;
    }
    List<String> command = new ArrayList<>();
    command.add("/bin/sh");
    command.add("-c");
    command.add(WATCHDOG);
    command.add("steelyard-etcd-watchdog");
    command.add(Long.toString(ProcessHandle.current().pid()));
    command.add(logFile().toString());
    command.add(dir.toString());
    command.addAll(cluster.etcdCommand(this));
    ProcessBuilder builder = new ProcessBuilder(command).directory(dir.toFile());
    // etcd reads ETCD_* variables as flags; ETCD_BINARY (ours) would only earn a warning, but a
    // stray ETCD_DATA_DIR or ETCD_LISTEN_CLIENT_URLS in the caller's environment must not leak in.
    builder.environment().keySet().removeIf(key -> key.startsWith("ETCD_") || key.startsWith("ETCDCTL_"));
    builder.redirectError(ProcessBuilder.Redirect.appendTo(logFile().toFile()));
    try {
      Files.createDirectories(dir);
      watchdog = builder.start();
      watchdog.getOutputStream().close();
      String line;
      // The watchdog writes nothing after the PID, so its stdout can be closed right away.
      try (BufferedReader out =
          new BufferedReader(new InputStreamReader(watchdog.getInputStream(), StandardCharsets.US_ASCII))) {
        line = out.readLine();
      }
      if (line == null) {
        throw new IllegalStateException("watchdog for " + name + " exited before starting etcd" + logTail());
      }
      etcdPid = Long.parseLong(line.trim());
      // The watchdog reports the PID right after fork; if etcd already exited, of() is empty.
      exitExpected = false;
      etcd = ProcessHandle.of(etcdPid).orElse(null);
      if (etcd != null) {
        long pid = etcdPid;
        etcd.onExit().thenRun(() -> {
          // After restart() the exit of the old process may be seen once the new one runs, with
          // exitExpected reset for it: only the current process's exit can be unexpected.
          if (!exitExpected && etcdPid == pid && !cluster.isClosed()) {
            log.warn("etcd member {} (pid {}) exited on its own{}", name, pid, logTail());
          }
        });
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start etcd member " + name, e);
    }
    log.debug("launched {} (etcd pid {}, watchdog pid {}), log {}", name, etcdPid, watchdog.pid(), logFile());
  }

  void awaitReady(BooleanSupplier ready) {
    EtcdHttp.await("etcd member " + name + " at " + clientEndpoint(), ready, this::isRunning, START_TIMEOUT, this::logTail);
  }

  /** Last lines of the member's log, prefixed for use in exception messages. */
  String logTail() {
    try {
      if (!Files.exists(logFile())) {
        return "; no log at " + logFile();
      }
      List<String> lines = Files.readAllLines(logFile(), StandardCharsets.UTF_8);
      List<String> tail = lines.subList(Math.max(0, lines.size() - LOG_TAIL_LINES), lines.size());
      return "; last " + tail.size() + " lines of " + logFile() + ":\n" + String.join("\n", tail);
    } catch (IOException | UncheckedIOException e) {
      return "; log " + logFile() + " unreadable: " + e;
    }
  }

  boolean logContains(String text) {
    try {
      return Files.exists(logFile()) && Files.readString(logFile(), StandardCharsets.UTF_8).contains(text);
    } catch (IOException | UncheckedIOException e) {
      return false;
    }
  }

  // etcd is our grandchild, so we cannot wait() for it; the watchdog is our child and exits as
  // soon as its wait on etcd returns, so waiting for the watchdog covers both.
  private boolean awaitExit(Duration timeout) {
    try {
      boolean exited = watchdog.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
      return exited && (etcd == null || !etcd.isAlive());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while stopping " + name, e);
    }
  }

  @Override
  public String toString() {
    return name + "@" + clientEndpoint();
  }
}
