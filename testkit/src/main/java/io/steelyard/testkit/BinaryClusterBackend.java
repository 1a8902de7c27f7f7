package io.steelyard.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Members run from the local etcd binary on loopback ports, each in its own temp directory. */
final class BinaryClusterBackend implements ClusterBackend {

  private static final Logger log = LoggerFactory.getLogger(BinaryClusterBackend.class);

  static final String INSTALL_HINT =
      "Install etcd with `apt-get install -y etcd-server etcd-client`, or set ETCD_BINARY to an"
          + " etcd 3.4+ binary, or start Docker.";

  /** Port races (another process grabbing a port between our probe and etcd's bind) get retried. */
  private static final int START_ATTEMPTS = 3;

  private static final Map<Path, Boolean> NO_FSYNC_SUPPORT = new ConcurrentHashMap<>();

  private final Path binary;
  private final List<String> extraArgs;
  private final ClusterTls tls; // null: plain client port
  private final String token = "steelyard-" + UUID.randomUUID();
  private final Path root;
  private final List<BinaryMember> members = new ArrayList<>();
  /** Ports handed out before free ones, so a test can provoke a bind failure. */
  private final java.util.Deque<Integer> presetPorts = new java.util.ArrayDeque<>();
  private volatile boolean closed;
  private boolean faultProxies; // set before start()

  BinaryClusterBackend(int size, Path binary, List<String> extraArgs) {
    this(size, binary, extraArgs, null);
  }

  BinaryClusterBackend(int size, Path binary, List<String> extraArgs, ClusterTls tls) {
    this.binary = binary;
    this.extraArgs = List.copyOf(extraArgs);
    this.tls = tls;
    try {
      this.root = Files.createTempDirectory("steelyard-etcd-");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create a temp directory for etcd", e);
    }
    for (int i = 0; i < size; i++) {
      String name = "etcd" + i;
      members.add(new BinaryMember(name, root.resolve(name), this));
    }
  }

  /**
   * The etcd binary to use: {@code explicit} if given, else {@code $ETCD_BINARY}, else {@code
   * etcd} on the PATH; fails with installation instructions when none is executable.
   */
  static Path resolveBinary(Path explicit) {
    if (explicit != null) {
      return requireExecutable(explicit, "etcdBinary(" + explicit + ")");
    }
    String env = System.getenv("ETCD_BINARY");
    if (env != null && !env.isBlank()) {
      return requireExecutable(Path.of(env), "ETCD_BINARY=" + env);
    }
    Path found = findOnPath();
    if (found == null) {
      throw new IllegalStateException("no etcd binary on PATH and ETCD_BINARY is not set. " + INSTALL_HINT);
    }
    return found;
  }

  static Path findOnPath() {
    String path = System.getenv("PATH");
    if (path == null) {
      return null;
    }
    for (String dir : path.split(java.io.File.pathSeparator)) {
      if (dir.isEmpty()) {
        continue;
      }
      Path candidate = Path.of(dir, "etcd");
      if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
        return candidate;
      }
    }
    return null;
  }

  private static Path requireExecutable(Path binary, String source) {
    if (!Files.isRegularFile(binary) || !Files.isExecutable(binary)) {
      throw new IllegalStateException(
          "etcd binary " + binary + " (from " + source + ") does not exist or is not executable. " + INSTALL_HINT);
    }
    return binary;
  }

  /** For tests: the next ports to use (client, peer, client, ...) instead of probed free ones. */
  void presetPorts(int... ports) {
    for (int port : ports) {
      presetPorts.add(port);
    }
  }

  boolean tls() {
    return tls != null;
  }

  @Override
  public URI probeEndpoint(EtcdMember member) {
    return ((BinaryMember) member).probeEndpoint();
  }

  boolean isClosed() {
    return closed;
  }

  /** Puts a {@link FaultProxy} in front of every member's client and peer port; before start(). */
  void enableFaultProxies() {
    if (!SocketOwners.supported()) {
      throw new IllegalStateException(
          "partitionable(): needs Linux's /proc to tell which member dialed a peer connection");
    }
    faultProxies = true;
  }

  /** Wakes every proxy to re-evaluate its links after a member's partition changed. */
  void recheckProxies() {
    for (BinaryMember member : members) {
      member.proxies().forEach(FaultProxy::recheck);
    }
  }

  @Override
  public void start() {
    for (int attempt = 1; ; attempt++) {
      assignFreePorts();
      if (faultProxies) {
        startProxies(); // after the ports: each proxy forwards to its member's real ports
      }
      log.debug("starting {} etcd member(s) from {} in {} (attempt {})", members.size(), binary, root, attempt);
      try {
        members.forEach(BinaryMember::launch);
        // Every member must be launched before any can become healthy: they need a quorum.
        for (BinaryMember member : members) {
          member.awaitReady(() -> EtcdHttp.isHealthy(member.probeEndpoint()));
        }
        return;
      } catch (RuntimeException e) {
        members.forEach(BinaryMember::kill);
        boolean portRace = members.stream().anyMatch(m -> m.logContains("address already in use"));
        if (!portRace || attempt >= START_ATTEMPTS) {
          throw e;
        }
        log.info("etcd lost a port race on attempt {}; retrying with new ports", attempt);
        members.forEach(m -> deleteRecursively(m.dir()));
      }
    }
  }

  @Override
  public List<BinaryMember> members() {
    return members;
  }

  /** Whether enough other members run that one more starting member can become healthy. */
  boolean quorumRunning() {
    long running = members.stream().filter(BinaryMember::isRunning).count();
    return running + 1 > members.size() / 2;
  }

  List<String> etcdCommand(BinaryMember member) {
    String client = member.directClientEndpoint().toString();
    String listenClient = tls == null ? client : client + "," + member.probeEndpoint();
    String advertisedClient = member.clientEndpoint().toString(); // the proxy, when there is one
    String peer = member.listenPeerUrl().toString();
    String advertisedPeer = member.peerUrl().toString();
    String initialCluster =
        members.stream().map(m -> m.name() + "=" + m.peerUrl()).collect(Collectors.joining(","));
    List<String> command = new ArrayList<>();
    command.add(binary.toString());
    // On a restart the data dir already holds a WAL, and etcd ignores the --initial-* flags.
    command.addAll(
        List.of(
            "--name", member.name(),
            "--data-dir", member.dataDir().toString(),
            "--listen-client-urls", listenClient,
            "--advertise-client-urls", advertisedClient,
            "--listen-peer-urls", peer,
            "--initial-advertise-peer-urls", advertisedPeer,
            "--initial-cluster", initialCluster,
            "--initial-cluster-state", "new",
            "--initial-cluster-token", token));
    command.addAll(EtcdTuning.FLAGS);
    command.addAll(List.of("--logger", "zap")); // etcd 3.4 defaults to capnslog
    if (tls != null) {
      command.addAll(
          List.of(
              "--cert-file", tls.certificates().serverCert().toString(),
              "--key-file", tls.certificates().serverKey().toString()));
      if (tls.clientCertAuth()) {
        command.addAll(
            List.of(
                "--client-cert-auth",
                "--trusted-ca-file", tls.certificates().caCert().toString()));
      }
    }
    if (supportsNoFsync(binary)) {
      command.add(EtcdTuning.NO_FSYNC);
    }
    command.addAll(extraArgs);
    return command;
  }

  @Override
  public void close() {
    closed = true;
    for (BinaryMember member : members) {
      try {
        member.kill();
      } catch (RuntimeException e) {
        log.warn("could not kill etcd member {}", member.name(), e);
      }
    }
    members.forEach(m -> m.proxies().forEach(FaultProxy::close));
    deleteRecursively(root);
  }

  /** {@code etcdctl snapshot save} from {@code member}; returns the snapshot's revision. */
  long snapshot(BinaryMember member, Path file) {
    return EtcdSnapshots.save(EtcdSnapshots.etcdctl(binary), member.directClientEndpoint(), file);
  }

  /**
   * Stops every member, rebuilds each data directory from {@code file} with {@code etcdctl
   * snapshot restore} (same names, peer URLs and token, hence the same member ids), and starts
   * them again; returns once each serves.
   */
  void restore(Path file) {
    Path etcdctl = EtcdSnapshots.etcdctl(binary);
    EtcdSnapshots.revision(etcdctl, file); // a bad file fails here, before anything is stopped
    members.forEach(BinaryMember::stop);
    String initialCluster =
        members.stream().map(m -> m.name() + "=" + m.peerUrl()).collect(Collectors.joining(","));
    for (BinaryMember member : members) {
      deleteRecursively(member.dataDir());
      EtcdSnapshots.restore(
          etcdctl, file, member.name(), member.dataDir(), initialCluster, token, member.peerUrl());
    }
    members.forEach(BinaryMember::launch);
    for (BinaryMember member : members) {
      member.awaitReady(() -> EtcdHttp.isHealthy(member.probeEndpoint()));
    }
  }

  private void startProxies() {
    for (BinaryMember member : members) {
      member.proxies().forEach(FaultProxy::close); // a previous attempt's
      java.net.URI client = member.directClientEndpoint();
      java.net.URI peer = member.listenPeerUrl();
      FaultProxy clientProxy =
          FaultProxy.start(
              member.name() + "-client",
              new java.net.InetSocketAddress(client.getHost(), client.getPort()),
              socket -> 0,
              dialer -> member.partitioned().orElse(null) == Partition.FROM_EVERYTHING);
      FaultProxy peerProxy =
          FaultProxy.start(
              member.name() + "-peer",
              new java.net.InetSocketAddress(peer.getHost(), peer.getPort()),
              socket -> SocketOwners.dialer(socket.getPort(), socket.getLocalPort(), memberPids()).orElse(0),
              dialer -> member.partitioned().isPresent() || dialerPartitioned(dialer));
      member.attachProxies(clientProxy, peerProxy);
    }
  }

  private List<Long> memberPids() {
    List<Long> pids = new ArrayList<>();
    for (BinaryMember member : members) {
      member.pid().ifPresent(pids::add);
    }
    return pids;
  }

  private boolean dialerPartitioned(long pid) {
    for (BinaryMember member : members) {
      if (pid != 0 && member.pid().orElse(0L) == pid) {
        return member.partitioned().isPresent();
      }
    }
    return false;
  }

  Path root() {
    return root;
  }

  private void assignFreePorts() {
    int perMember = tls == null ? 2 : 3;
    int needed = members.size() * perMember;
    List<Integer> ports = new ArrayList<>();
    while (ports.size() < needed && !presetPorts.isEmpty()) {
      ports.add(presetPorts.poll());
    }
    // Members restart on their ports, so they take them below the ephemeral range.
    ports.addAll(FreePorts.distinct(needed - ports.size()));
    for (int i = 0; i < members.size(); i++) {
      int first = perMember * i;
      members.get(i).assignPorts(
          ports.get(first), ports.get(first + 1), tls == null ? 0 : ports.get(first + 2));
    }
  }

  private static boolean supportsNoFsync(Path binary) {
    return NO_FSYNC_SUPPORT.computeIfAbsent(binary, BinaryClusterBackend::probeNoFsync);
  }

  private static boolean probeNoFsync(Path binary) {
    try {
      Process help = new ProcessBuilder(binary.toString(), "--help").redirectErrorStream(true).start();
      help.getOutputStream().close();
      String text = new String(help.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      help.waitFor(10, TimeUnit.SECONDS);
      return text.contains(EtcdTuning.NO_FSYNC);
    } catch (IOException e) {
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  static void deleteRecursively(Path path) {
    if (!Files.exists(path)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(path)) {
      walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException | UncheckedIOException e) {
      log.warn("could not delete {}", path, e);
    }
  }
}
