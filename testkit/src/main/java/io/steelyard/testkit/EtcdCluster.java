package io.steelyard.testkit;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real etcd cluster (1 to 5 members) for tests: Docker containers (Testcontainers) where a
 * Docker engine is available, otherwise the local {@code etcd} binary on loopback ports.
 *
 * <p>As a JUnit 5 extension on a static field it starts before the class's first test and is
 * closed after its last:
 *
 * <pre>{@code
 * @RegisterExtension
 * static final EtcdCluster etcd = EtcdCluster.builder().members(3).build();
 *
 * @Test
 * void survivesLeaderLoss() {
 *   Client client = Client.builder().endpoints(etcd.clientEndpoints().toArray(URI[]::new)).build();
 *   etcd.leader().kill();
 *   etcd.awaitHealthy(Duration.ofSeconds(15));
 *   ...
 * }
 * }</pre>
 *
 * <p>Standalone, use try-with-resources: {@code try (EtcdCluster etcd = EtcdCluster.builder().build())
 * { etcd.start(); ... }}.
 *
 * <p>Processes are always cleaned up: by {@link #close()}, by a JVM shutdown hook, and, for the
 * binary backend, by a per-member watchdog that kills etcd within a second of the JVM dying even
 * by SIGKILL (with Docker, Testcontainers' Ryuk does the same). Each member logs to {@code
 * etcd.log} in its own temp directory; a failed start reports the tail of that log.
 *
 * <p>Thread-safe. {@link #start()} takes about a second for one binary member and a few seconds
 * for three; methods that wait are bounded and throw {@link IllegalStateException} on timeout.
 */
public final class EtcdCluster implements BeforeAllCallback, AfterAllCallback, AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(EtcdCluster.class);
  /** Bound for {@link #leaderIndex()}. */
  private static final Duration LEADER_TIMEOUT = Duration.ofSeconds(10);
  /** Bound for the whole cluster to become healthy after start; generous for a loaded CI box. */
  private static final Duration START_TIMEOUT = Duration.ofSeconds(60);

  private static final Set<EtcdCluster> OPEN = ConcurrentHashMap.newKeySet();

  static {
    Thread hook = new Thread(() -> OPEN.forEach(EtcdCluster::close), "steelyard-etcd-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
  }

  /** Where the members run. */
  public enum Backend {
    /** Docker if {@code DockerClientFactory.instance().isDockerAvailable()}, else the binary. */
    AUTO,
    /** The local etcd binary ({@link Builder#etcdBinary}, {@code $ETCD_BINARY} or {@code etcd} on the PATH). */
    BINARY,
    /** Testcontainers; the host port of a member may change when it is started again. */
    DOCKER
  }

  /** The backend quota members run with unless {@link Builder#quotaBackendBytes} says otherwise. */
  static final long DEFAULT_QUOTA_BACKEND_BYTES = 256L * 1024 * 1024;

  private final int size;
  private final Backend requestedBackend;
  private final Path etcdBinary;
  private final List<String> extraArgs;
  private final boolean partitionable;
  private final long quotaBackendBytes;
  private final ClusterTls tls;
  private final String rootPassword;
  private final ClusterHealth health;

  private ClusterBackend backend; // guarded by this
  private boolean closed; // guarded by this
  private String startedBy; // guarded by this; unique id of the extension context that started us

  private EtcdCluster(Builder builder) {
    this.size = builder.members;
    // etcd reads the JWT keys from files on this machine: binary members.
    this.requestedBackend = builder.jwtTokens != null ? Backend.BINARY : builder.backend;
    this.etcdBinary = builder.etcdBinary;
    this.partitionable = builder.partitionable;
    this.quotaBackendBytes = builder.quotaBackendBytes;
    this.extraArgs = MemberFlags.of(builder.extraArgs, builder.jwtTokens, builder.quotaBackendBytes);
    this.tls = builder.tls;
    this.rootPassword = builder.rootPassword;
    this.health = new ClusterHealth(this::members, this::probe);
  }

  /** The user {@link Builder#rootPassword} creates: {@value}. */
  public static final String ROOT_USER = "root";

  /** A builder with defaults: one member, {@link Backend#AUTO}. */
  public static Builder builder() {
    return new Builder();
  }

  /** Configures an {@link EtcdCluster}; not thread-safe. */
  public static final class Builder {
    private int members = 1;
    private Backend backend = Backend.AUTO;
    private Path etcdBinary;
    private List<String> extraArgs = List.of();
    private boolean partitionable;
    private long quotaBackendBytes = DEFAULT_QUOTA_BACKEND_BYTES;
    private ClusterTls tls;
    private String rootPassword;
    private String jwtTokens;

    private Builder() {}

    /**
     * Serve clients over TLS with {@code certs}' server certificate ({@code https://} endpoints);
     * clients need no certificate of their own. Binary backend only.
     */
    public Builder tls(TestCertificates certs) {
      checkTlsUnset();
      this.tls = new ClusterTls(Objects.requireNonNull(certs, "certs"), false);
      return this;
    }

    /**
     * Serve clients over mutual TLS: as {@link #tls} and every client must present a certificate
     * signed by {@code certs}' CA ({@code --client-cert-auth}). Binary backend only.
     */
    public Builder mutualTls(TestCertificates certs) {
      checkTlsUnset();
      this.tls = new ClusterTls(Objects.requireNonNull(certs, "certs"), true);
      return this;
    }

    private void checkTlsUnset() {
      if (tls != null) {
        throw new IllegalStateException("tls already set");
      }
    }

    /**
     * Once started, create the user {@value EtcdCluster#ROOT_USER} with this password and the
     * {@code root} role, and enable auth: from then on every client must log in. Short token
     * lifetimes for expiry tests go through {@link #extraArgs}, e.g. {@code "--auth-token-ttl",
     * "2"} (simple tokens, etcd's default), or {@link #jwtTokens}.
     */
    public Builder rootPassword(String password) {
      if (rootPassword != null) {
        throw new IllegalStateException("rootPassword already set");
      }
      this.rootPassword = Objects.requireNonNull(password, "password");
      return this;
    }

    /**
     * Issue auth tokens as JWTs signed with {@code keys} (RS256) that expire {@code ttl} after
     * login however much they are used, not simple tokens. Runs the binary backend: etcd reads
     * the keys from files on this machine, so {@code backend(DOCKER)} is refused.
     */
    public Builder jwtTokens(JwtKeys keys, Duration ttl) {
      if (jwtTokens != null) {
        throw new IllegalStateException("jwtTokens already set");
      }
      this.jwtTokens = Objects.requireNonNull(keys, "keys").authTokenFlag(ttl);
      return this;
    }

    /** Number of members; 1 or 3 are the useful ones, 1 to 5 are accepted. Default 1. */
    public Builder members(int n) {
      if (n < 1 || n > 5) {
        throw new IllegalArgumentException("members: " + n + " (expected: 1..5)");
      }
      this.members = n;
      return this;
    }

    /** Where members run. Default {@link Backend#AUTO}. */
    public Builder backend(Backend b) {
      this.backend = Objects.requireNonNull(b, "backend");
      return this;
    }

    /** The etcd executable for the binary backend. Default: {@code $ETCD_BINARY}, else {@code etcd} on the PATH. */
    public Builder etcdBinary(Path p) {
      this.etcdBinary = Objects.requireNonNull(p, "etcdBinary");
      return this;
    }

    /** Extra etcd flags, appended to every member's command line (both backends). */
    public Builder extraArgs(String... a) {
      Objects.requireNonNull(a, "extraArgs");
      List<String> args = Arrays.asList(a);
      args.forEach(arg -> Objects.requireNonNull(arg, "extraArgs element"));
      this.extraArgs = List.copyOf(args);
      return this;
    }

    /**
     * Runs every member behind {@link FaultProxy}s on its client and peer ports, so that {@link
     * EtcdMember#partition(Partition)} can cut it off. Client endpoints are then the proxies'.
     * Binary backend on Linux only (a proxy tells which member dialed it from {@code /proc}).
     */
    public Builder partitionable() {
      this.partitionable = true;
      return this;
    }

    /**
     * etcd's {@code --quota-backend-bytes} for every member; default 256 MiB. A few MiB make
     * {@link EtcdCluster#fillQuota()} cheap.
     */
    public Builder quotaBackendBytes(long bytes) {
      if (bytes < 1024 * 1024) {
        throw new IllegalArgumentException("quotaBackendBytes: " + bytes + " (expected: >= 1 MiB)");
      }
      this.quotaBackendBytes = bytes;
      return this;
    }

    /** A cluster that is not started yet; {@link #jwtTokens} with {@code backend(DOCKER)} is refused. */
    public EtcdCluster build() {
      if (jwtTokens != null && backend == Backend.DOCKER) {
        throw new IllegalStateException(
            "backend: DOCKER with jwtTokens (expected: BINARY or AUTO: etcd reads the JWT keys from files here)");
      }
      return new EtcdCluster(this);
    }
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    synchronized (this) {
      if (startedBy == null && backend == null) {
        startedBy = context.getUniqueId();
      }
    }
    start();
  }

  @Override
  public void afterAll(ExtensionContext context) {
    // An extension on an outer class also sees @Nested classes' callbacks; only the context that
    // started the cluster may close it.
    synchronized (this) {
      if (startedBy != null && !startedBy.equals(context.getUniqueId())) {
        return;
      }
    }
    close();
  }

  /**
   * Starts every member and waits until each is healthy and a leader exists. Idempotent.
   *
   * @throws IllegalStateException if no etcd can be started (the message says what to install),
   *     if a member fails to start (the message has the tail of its log), or after {@link #close()}
   */
  public synchronized void start() {
    if (closed) {
      throw new IllegalStateException("etcd cluster already closed");
    }
    if (backend != null) {
      return;
    }
    ClusterBackend created =
        ClusterBackends.create(requestedBackend, size, etcdBinary, extraArgs, tls);
    OPEN.add(this);
    backend = created;
    try {
      if (partitionable) {
        ClusterBackends.binary("partitionable()", created).enableFaultProxies();
      }
      created.start();
      awaitHealthy(START_TIMEOUT);
      if (rootPassword != null) {
        EtcdHttp.enableAuth(created.probeEndpoint(created.members().get(0)), ROOT_USER, rootPassword);
      }
    } catch (RuntimeException e) {
      backend = null;
      OPEN.remove(this);
      created.close();
      throw e;
    }
    log.info("etcd cluster of {} member(s) up at {}", size, endpoints());
  }

  /** Stops every member and deletes their data. Idempotent; never throws. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    OPEN.remove(this);
    if (backend != null) {
      backend.close();
      backend = null;
    }
  }

  /**
   * Undoes every member fault: resumes frozen members, heals partitions, starts members that were
   * stopped or killed, and waits until the cluster is healthy. For the {@code @AfterEach} of
   * tests that share one cluster between fault cases.
   *
   * @throws IllegalStateException if the cluster is not healthy within {@code timeout}
   */
  public void undoFaults(Duration timeout) {
    for (EtcdMember m : members()) {
      if (m.isFrozen()) {
        m.resume();
      }
      if (m.partitioned().isPresent()) {
        m.heal();
      }
      m.start();
    }
    awaitHealthy(timeout);
  }

  /**
   * Writes filler values (outside any registry prefix) until etcd refuses one with "database space
   * exceeded" and raises its NOSPACE alarm, after which the cluster accepts only reads, deletes,
   * compaction, defragmentation and alarm changes. Build the cluster with a small {@link
   * Builder#quotaBackendBytes} (at most 64 MiB). Returns the bytes written.
   *
   * <pre>{@code
   * EtcdCluster etcd = EtcdCluster.builder().members(3).quotaBackendBytes(8 << 20).build();
   * etcd.fillQuota();    // NOSPACE: puts and lease grants fail
   * etcd.freeQuota();    // delete filler, compact, defragment every member, disarm
   * }</pre>
   */
  public long fillQuota() {
    long written = EtcdQuota.fill(health.anyServing(), quotaBackendBytes);
    EtcdQuota.awaitNoSpace(this::alarms, true);
    log.info("filled the etcd quota ({} bytes) with {} bytes: NOSPACE", quotaBackendBytes, written);
    return written;
  }

  /**
   * Frees the space {@link #fillQuota()} took, as etcd's maintenance guide says: deletes the
   * filler, compacts at that revision, defragments every running member and disarms NOSPACE.
   * Every running member must be reachable.
   */
  public void freeQuota() {
    List<URI> running = members().stream().filter(EtcdMember::isRunning).map(this::probe).toList();
    EtcdQuota.free(health.anyServing(), running);
    EtcdQuota.awaitNoSpace(this::alarms, false);
    log.info("freed the etcd quota and disarmed NOSPACE");
  }

  /** The cluster's active alarm types, e.g. {@code [NOSPACE]}; one entry per member and alarm. */
  public List<String> alarms() {
    return EtcdQuota.alarms(health.anyServing()).stream().map(EtcdQuota.Alarm::type).toList();
  }

  /**
   * Saves a snapshot of the leader's data to {@code file} with {@code etcdctl snapshot save};
   * returns the revision it holds. Binary backend.
   */
  public long snapshot(Path file) {
    Objects.requireNonNull(file, "file");
    BinaryClusterBackend b = ClusterBackends.binary("snapshot", currentBackend());
    long revision = b.snapshot((BinaryMember) leader(), file);
    log.info("etcd snapshot at revision {} saved to {}", revision, file);
    return revision;
  }

  /**
   * Restores the whole cluster from a {@link #snapshot} taken earlier, as an operator recovers
   * from a disaster: stops every member, rebuilds each data directory with {@code etcdctl snapshot
   * restore} (same member names, peer URLs and cluster token), starts them and waits until the
   * cluster is healthy. Keys, values and leases are those of the snapshot and the revision goes
   * back to the snapshot's (etcd 3.4 has no {@code --bump-revision}); leases in it are live again
   * with their full TTL. Binary backend.
   */
  public void restore(Path file) {
    Objects.requireNonNull(file, "file");
    ClusterBackends.binary("restore", currentBackend()).restore(file);
    awaitHealthy(START_TIMEOUT);
    log.info("etcd cluster restored from {}", file);
  }

  private synchronized ClusterBackend currentBackend() {
    if (backend == null) {
      throw new IllegalStateException(closed ? "etcd cluster already closed" : "etcd cluster not started");
    }
    return backend;
  }

  private URI probe(EtcdMember member) {
    return currentBackend().probeEndpoint(member);
  }

  /**
   * Adds users and roles; the cluster must have been built with {@link Builder#rootPassword}.
   *
   * @throws IllegalStateException if auth was not enabled by the testkit
   */
  public EtcdAuthAdmin authAdmin() {
    if (rootPassword == null) {
      throw new IllegalStateException("auth not enabled: build the cluster with rootPassword(...)");
    }
    EtcdMember running =
        members().stream().filter(EtcdMember::isRunning).findFirst()
            .orElseThrow(() -> new IllegalStateException("no etcd member running"));
    return new EtcdAuthAdmin(probe(running), rootPassword);
  }

  /**
   * Whether any member's etcd log contains {@code text}, e.g. {@code "invalid auth token"} to
   * prove a test really made etcd refuse an expired token. Binary backend only.
   */
  public boolean logsContain(String text) {
    Objects.requireNonNull(text, "text");
    return ClusterBackends.binary("logsContain", currentBackend()).members().stream().anyMatch(m -> m.logContains(text));
  }

  /** The number of members. */
  public int size() {
    return size;
  }

  /** The member at {@code index} ({@code 0 <= index < size()}); the cluster must be started. */
  public EtcdMember member(int index) {
    List<EtcdMember> all = members();
    if (index < 0 || index >= all.size()) {
      throw new IndexOutOfBoundsException("index: " + index + " (expected: 0.." + (all.size() - 1) + ")");
    }
    return all.get(index);
  }

  /** All members, in index order; the cluster must be started. */
  public List<EtcdMember> members() {
    return List.copyOf(currentBackend().members());
  }

  /**
   * Each member's client URL, e.g. {@code http://127.0.0.1:40001} ({@code https://} with TLS), in index order. Stable across
   * member restarts with the binary backend; re-read it after a restart with Docker.
   */
  public List<URI> clientEndpoints() {
    return members().stream().map(EtcdMember::clientEndpoint).collect(Collectors.toUnmodifiableList());
  }

  /** {@link #clientEndpoints()} joined with commas, e.g. {@code http://127.0.0.1:40001,http://127.0.0.1:40002}. */
  public String endpoints() {
    return clientEndpoints().stream().map(URI::toString).collect(Collectors.joining(","));
  }

  /**
   * Index of the running member that is the current leader, waiting up to 10 s for one.
   *
   * @throws IllegalStateException if no leader emerges in time
   */
  public int leaderIndex() {
    return health.awaitLeader(LEADER_TIMEOUT);
  }

  /** The current leader; see {@link #leaderIndex()}. */
  public EtcdMember leader() {
    return member(leaderIndex());
  }

  /**
   * Waits until every running member answers {@code /health} with true and one of them is leader.
   *
   * @throws IllegalStateException on timeout, with each member's state
   */
  public void awaitHealthy(Duration timeout) {
    Objects.requireNonNull(timeout, "timeout");
    EtcdHttp.await(
        "etcd cluster " + members(), health::healthy, () -> true, timeout, () -> ": " + health.describe());
  }

  @Override
  public String toString() {
    synchronized (this) {
      if (backend == null) {
        return "EtcdCluster[" + size + " member(s), " + (closed ? "closed" : "not started") + "]";
      }
    }
    return "EtcdCluster[" + endpoints() + "]";
  }
}
