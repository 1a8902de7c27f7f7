package io.steelyard.xds;

import static com.google.common.base.Preconditions.checkArgument;
import static com.google.common.base.Preconditions.checkState;
import static java.util.Objects.requireNonNull;

import com.google.common.util.concurrent.ThreadFactoryBuilder;
import io.envoyproxy.controlplane.cache.ConfigWatcher;
import io.envoyproxy.controlplane.cache.NodeGroup;
import io.envoyproxy.controlplane.cache.v3.SimpleCache;
import io.envoyproxy.controlplane.server.V3DiscoveryServer;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.grpc.InsecureServerCredentials;
import io.grpc.Server;
import io.grpc.ServerCredentials;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.NettyServerBuilder;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.SslContextBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.steelyard.discovery.ChannelConfigCheck;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.Validation;
import io.steelyard.registry.internal.TlsFiles;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An xDS control plane over the registry: serves ADS (LDS, CDS, EDS; state of the world and
 * delta) so that any gRPC client with xDS support, and Envoy, can dial {@code xds:///SERVICE}
 * and balance with the registered weights.
 *
 * <pre>{@code
 * try (XdsServer xds = XdsServer.builder(EtcdConnection.of("http://127.0.0.1:2379"))
 *     .services(Set.of("greeter")).port(18000).build().start()) {
 *   logger.info("xDS on {}", xds.address());
 * }
 * }</pre>
 *
 * <p>What each service becomes, and why the share travels in locality weights, is described in
 * docs/xds.md. Versions are hashes of the served bytes, so replicas watching the same etcd serve
 * the same versions and a client may move between them. While etcd is unreachable the last view
 * keeps being served; the health service says SERVING once the first view is in.
 *
 * <p>Trust: plaintext is served on loopback only unless {@link Builder#insecureListen()}; {@link
 * Builder#tls} serves TLS and {@link Builder#clientCa} asks every client for a certificate signed
 * by that CA (files reloaded as they change), {@link Builder#authorize} grants services to client
 * identities, and {@link Builder#tlsListen} serves mutual TLS on a second address beside a
 * plaintext loopback one.
 * Streams per peer, streams in total and names per stream are bounded. See docs/security.md.
 *
 * <p>Ownership: the server opens and closes its own etcd clients; {@link #close()} stops
 * serving, then stops watching. Thread-safe.
 */
public final class XdsServer implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(XdsServer.class);

  /** Default port: {@value}. */
  public static final int DEFAULT_PORT = 18000;
  /** Default host to listen on: {@value}, as plaintext beyond loopback is opt-in. */
  public static final String DEFAULT_HOST = "127.0.0.1";

  private final Builder config;
  private final ScheduledExecutorService executor;
  private final HealthStatusManager health = new HealthStatusManager();
  private final XdsPublisher publisher;
  private final XdsMetrics metrics;
  private final ServedServices served;
  private final V3DiscoveryServer discovery;
  private final StreamLimits limits;
  private final HandshakeRefusals refusals;
  private final ClientIdentity identities;
  private final Object lock = new Object();
  @Nullable private Server server; // guarded by lock
  @Nullable private Server tlsServer; // guarded by lock; with tlsListen only
  private boolean closed; // guarded by lock

  private XdsServer(Builder config) {
    this.config = config;
    this.executor =
        Executors.newSingleThreadScheduledExecutor(
            new ThreadFactoryBuilder().setNameFormat("steelyard-xds-%d").setDaemon(true).build());
    // One snapshot per zone the clients name, one for clients without a zone (Subscribers).
    NodeGroup<String> groups = this::groupOf;
    SimpleCache<String> cache = new SimpleCache<>(groups);
    health.setStatus("", ServingStatus.NOT_SERVING);
    this.publisher =
        new XdsPublisher(cache, executor, config.clock, config.maxZones,
            new ConfigMapping(ChannelConfigCheck.create()),
            () -> health.setStatus("", ServingStatus.SERVING));
    this.metrics = new XdsMetrics(config.meterRegistry, publisher);
    XdsCallbacks callbacks = new XdsCallbacks(metrics, publisher.subscribers());
    ConfigWatcher watcher = new WatchGuard(cache, callbacks, groups);
    if (config.grants != null) {
      watcher = new GrantedWatcher(watcher, config.grants, metrics);
    }
    this.discovery = new V3DiscoveryServer(callbacks, watcher);
    this.limits = new StreamLimits(config.maxStreamsPerPeer, config.maxStreams, config.maxNamesPerStream, metrics);
    this.refusals = new HandshakeRefusals(metrics);
    this.identities = new ClientIdentity(config.grants != null, metrics);
    this.served =
        new ServedServices(config.connection, config.layout, config.services, publisher, executor);
  }

  private String groupOf(Node node) {
    return publisher.subscribers().groupOf(node);
  }

  public static Builder builder(EtcdConnection connection) {
    return new Builder(connection);
  }

  /** Binds the port and starts watching etcd. */
  public XdsServer start() {
    synchronized (lock) {
      checkState(server == null && !closed, "already started");
      boolean mainTls = config.certChain != null && config.tlsHost == null;
      server = listen(config.host, config.port, mainTls ? tlsCredentials() : InsecureServerCredentials.create());
      if (config.tlsHost != null) {
        tlsServer = listen(config.tlsHost, config.tlsPort, tlsCredentials());
      }
      if (config.insecureListen && !isLoopback(config.host) && !mainTls) {
        log.warn("Serving xDS in plaintext on {}:{}, beyond this host (--insecure-listen): anyone who reaches it"
            + " reads every served service", config.host, port());
      }
      served.start();
      log.info("xDS control plane on port {}{}, services {}, etcd {}",
          port(), tlsServer == null ? "" : " (mutual TLS on port " + tlsPort() + ")",
          config.services == null ? "all" : config.services, config.connection.endpointsString());
      return this;
    }
  }

  private Server listen(String host, int port, ServerCredentials credentials) {
    Server s =
        NettyServerBuilder.forAddress(new InetSocketAddress(host, port), credentials)
            .addService(discovery.getAggregatedDiscoveryServiceImpl())
            .addService(health.getHealthService())
            .intercept(identities)
            .intercept(limits)
            // xDS streams live as long as their clients: let them send keepalives.
            .permitKeepAliveTime(10, TimeUnit.SECONDS)
            .permitKeepAliveWithoutCalls(true)
            .build();
    try {
      return s.start();
    } catch (IOException e) {
      if (server != null) {
        server.shutdownNow();
      }
      throw new UncheckedIOException("xds: cannot listen on " + host + ":" + port, e);
    }
  }

  /**
   * TLS with the server's certificate, and with a client CA mutual TLS, both from files read
   * again as they change (registry-core's {@link TlsFiles}, as for etcd).
   */
  private ServerCredentials tlsCredentials() {
    TlsFiles files = TlsFiles.of(config.clientCa, requireNonNull(config.certChain), requireNonNull(config.privateKey));
    files.require();
    SslContextBuilder tls = GrpcSslContexts.configure(SslContextBuilder.forServer(files.keyManager()));
    if (config.clientCa != null) {
      tls.trustManager(files.trustManager()).clientAuth(ClientAuth.REQUIRE);
    }
    try {
      return refusals.credentials(tls.build());
    } catch (IOException e) {
      throw new IllegalArgumentException("tls: cannot serve TLS from " + files + ": " + e.getMessage(), e);
    }
  }

  static boolean isLoopback(String host) {
    try {
      return InetAddress.getByName(host).isLoopbackAddress();
    } catch (UnknownHostException e) {
      return false;
    }
  }

  /** The port served (the bound one when built with port 0). */
  public int port() {
    synchronized (lock) {
      checkState(server != null, "not started");
      return ((InetSocketAddress) server.getListenSockets().get(0)).getPort();
    }
  }

  /**
   * The port serving TLS: the {@link Builder#tlsListen} one, else the main one when it serves TLS.
   */
  public int tlsPort() {
    synchronized (lock) {
      checkState(server != null, "not started");
      if (tlsServer != null) {
        return ((InetSocketAddress) tlsServer.getListenSockets().get(0)).getPort();
      }
      checkState(config.certChain != null, "not serving TLS");
      return port();
    }
  }

  /** Whether a first view of the services is being served. */
  public boolean serving() {
    return publisher.current() != null;
  }

  /** ADS streams open now. */
  public int clients() {
    return metrics.clients();
  }

  /** The newest etcd revision reflected in what is served; 0 before the first view. */
  public long revision() {
    XdsSnapshot s = publisher.current();
    return s == null ? 0 : s.revision();
  }

  /** How long the served view has gone without etcd; zero while etcd answers. */
  public Duration staleness() {
    return publisher.staleness();
  }

  XdsPublisher publisher() {
    return publisher;
  }

  XdsMetrics metrics() {
    return metrics;
  }

  /** Stops serving (open streams are cancelled), then stops watching etcd. */
  @Override
  public void close() {
    synchronized (lock) {
      if (closed) {
        return;
      }
      closed = true;
      health.enterTerminalState();
      for (Server s : new Server[] {server, tlsServer}) {
        if (s != null) {
          s.shutdownNow();
          try {
            s.awaitTermination(5, TimeUnit.SECONDS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      }
    }
    served.close();
    executor.shutdown();
    try {
      if (!executor.awaitTermination(5, TimeUnit.SECONDS)) {
        executor.shutdownNow();
      }
    } catch (InterruptedException e) {
      executor.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }

  /** Options of an {@link XdsServer}; each may be set once. */
  public static final class Builder {
    private final EtcdConnection connection;
    private KeyLayout layout = KeyLayout.defaults();
    @Nullable private Set<String> services;
    private String host = DEFAULT_HOST;
    private int port = DEFAULT_PORT;
    @Nullable private Path certChain;
    @Nullable private Path privateKey;
    @Nullable private Path clientCa;
    @Nullable private String tlsHost;
    private int tlsPort;
    private boolean insecureListen;
    @Nullable private Path grantsFile;
    @Nullable private GrantsFile grants;
    private int maxStreamsPerPeer = StreamLimits.DEFAULT_STREAMS_PER_PEER;
    private int maxStreams = StreamLimits.DEFAULT_STREAMS;
    private int maxNamesPerStream = StreamLimits.DEFAULT_NAMES_PER_STREAM;
    private int maxZones = Subscribers.DEFAULT_MAX_ZONES;
    private MeterRegistry meterRegistry = new SimpleMeterRegistry();
    private Clock clock = Clock.systemUTC();
    private final Set<String> set = new TreeSet<>();

    private Builder(EtcdConnection connection) {
      this.connection = requireNonNull(connection, "connection");
    }

    private void once(String option) {
      checkState(set.add(option), "%s already set", option);
    }

    /** Key layout (prefix); default {@link KeyLayout#defaults()}. */
    public Builder layout(KeyLayout layout) {
      once("layout");
      this.layout = requireNonNull(layout, "layout");
      return this;
    }

    /** Serve only these services; default: every service under the prefix, found as it appears. */
    public Builder services(Set<String> services) {
      once("services");
      checkArgument(!services.isEmpty(), "services: [] (expected: at least one)");
      services.forEach(Validation::checkServiceName);
      this.services = Set.copyOf(services);
      return this;
    }

    /** Host to listen on; default {@value #DEFAULT_HOST}. */
    public Builder host(String host) {
      once("host");
      this.host = requireNonNull(host, "host");
      return this;
    }

    /** Port to listen on, 0 for any free port; default {@value #DEFAULT_PORT}. */
    public Builder port(int port) {
      once("port");
      checkArgument(port >= 0 && port <= 65_535, "port: %s (expected: 0..65535)", port);
      this.port = port;
      return this;
    }

    /**
     * Serve TLS with this certificate chain and private key (PEM files), read again when they
     * change, for every new connection.
     */
    public Builder tls(Path certChain, Path privateKey) {
      once("tls");
      this.certChain = requireNonNull(certChain, "certChain");
      this.privateKey = requireNonNull(privateKey, "privateKey");
      return this;
    }

    /**
     * Require every client to present a certificate signed by the CA in {@code caFile}
     * (mutual TLS; needs {@link #tls}). The CA, certificate and key files are read again when
     * they change, for every new connection.
     */
    public Builder clientCa(Path caFile) {
      once("clientCa");
      this.clientCa = requireNonNull(caFile, "caFile");
      return this;
    }

    /**
     * Serve TLS (with {@link #tls}, and {@link #clientCa} if set) on this second address, and
     * plaintext on {@link #host}:{@link #port}, which must then be loopback unless {@link
     * #insecureListen()}. Port 0 picks a free one.
     */
    public Builder tlsListen(String host, int port) {
      once("tlsListen");
      checkArgument(port >= 0 && port <= 65_535, "tls port: %s (expected: 0..65535)", port);
      this.tlsHost = requireNonNull(host, "host");
      this.tlsPort = port;
      return this;
    }

    /** Allow plaintext on an address beyond loopback (logged at WARN when serving). */
    public Builder insecureListen() {
      once("insecureListen");
      this.insecureListen = true;
      return this;
    }

    /**
     * Serve each client identity only the services the grants in {@code file} name; see {@link
     * Grants}. Needs {@link #clientCa}: identities come from client certificates. The file is
     * read again when it changes; {@link #build()} fails if it does not parse.
     */
    public Builder authorize(Path file) {
      once("authorize");
      this.grantsFile = requireNonNull(file, "file");
      return this;
    }

    /** Bound of concurrent ADS streams from one IP address; default 100. */
    public Builder maxStreamsPerPeer(int streams) {
      once("maxStreamsPerPeer");
      checkArgument(streams > 0, "maxStreamsPerPeer: %s (expected: at least 1)", streams);
      this.maxStreamsPerPeer = streams;
      return this;
    }

    /** Bound of concurrent ADS streams in total; default 10,000. */
    public Builder maxStreams(int streams) {
      once("maxStreams");
      checkArgument(streams > 0, "maxStreams: %s (expected: at least 1)", streams);
      this.maxStreams = streams;
      return this;
    }

    /** Bound of resource names one stream subscribes to, per resource type; default 1,000. */
    public Builder maxNamesPerStream(int names) {
      once("maxNamesPerStream");
      checkArgument(names > 0, "maxNamesPerStream: %s (expected: at least 1)", names);
      this.maxNamesPerStream = names;
      return this;
    }

    /**
     * Bound of zones served at once, each a snapshot group; default 64. A client naming another
     * zone while that many are served gets the zone-blind assignment. A zone whose last stream
     * closed stops being served 30 s later.
     */
    public Builder maxZones(int zones) {
      once("maxZones");
      checkArgument(zones > 0, "maxZones: %s (expected: at least 1)", zones);
      this.maxZones = zones;
      return this;
    }

    /** Where the meters go; default a private {@code SimpleMeterRegistry}. */
    public Builder meterRegistry(MeterRegistry registry) {
      once("meterRegistry");
      this.meterRegistry = requireNonNull(registry, "registry");
      return this;
    }

    Builder clock(Clock clock) {
      once("clock");
      this.clock = requireNonNull(clock, "clock");
      return this;
    }

    /**
     * @throws IllegalArgumentException for a combination that would serve less safely than asked
     *     (each message names the option to add) or a grants file that does not parse
     */
    public XdsServer build() {
      checkArgument(clientCa == null || certChain != null,
          "tls: --tls-client-ca needs the server's own --tls-cert and --tls-key");
      checkArgument(tlsHost == null || certChain != null, "tls: --tls-listen needs --tls-cert and --tls-key");
      checkArgument(grantsFile == null || clientCa != null,
          "authorize: identities come from client certificates: add --tls-client-ca");
      boolean plaintext = certChain == null || tlsHost != null;
      checkArgument(!plaintext || insecureListen || isLoopback(host),
          "listen: plaintext on %s reaches beyond this host: add --tls-cert and --tls-key (and --tls-client-ca),"
              + " --tls-listen %s:PORT beside a loopback --host, or --insecure-listen", host, host);
      if (grantsFile != null) {
        grants = GrantsFile.load(grantsFile);
      }
      return new XdsServer(this);
    }
  }
}
