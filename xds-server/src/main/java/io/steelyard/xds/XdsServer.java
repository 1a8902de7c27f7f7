package io.steelyard.xds;

import static com.google.common.base.Preconditions.checkArgument;
import static com.google.common.base.Preconditions.checkState;
import static java.util.Objects.requireNonNull;

import com.google.common.util.concurrent.ThreadFactoryBuilder;
import io.envoyproxy.controlplane.cache.v3.SimpleCache;
import io.envoyproxy.controlplane.server.V3DiscoveryServer;
import io.grpc.InsecureServerCredentials;
import io.grpc.Server;
import io.grpc.ServerCredentials;
import io.grpc.TlsServerCredentials;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.Validation;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
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
 * <p>Ownership: the server opens and closes its own etcd clients; {@link #close()} stops
 * serving, then stops watching. Thread-safe.
 */
public final class XdsServer implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(XdsServer.class);

  /** Default port: {@value}. */
  public static final int DEFAULT_PORT = 18000;
  /** Default host to listen on: {@value}. */
  public static final String DEFAULT_HOST = "0.0.0.0";

  private final Builder config;
  private final ScheduledExecutorService executor;
  private final HealthStatusManager health = new HealthStatusManager();
  private final XdsPublisher publisher;
  private final XdsMetrics metrics;
  private final ServedServices served;
  private final V3DiscoveryServer discovery;
  private final Object lock = new Object();
  @Nullable private Server server; // guarded by lock
  private boolean closed; // guarded by lock

  private XdsServer(Builder config) {
    this.config = config;
    this.executor =
        Executors.newSingleThreadScheduledExecutor(
            new ThreadFactoryBuilder().setNameFormat("steelyard-xds-%d").setDaemon(true).build());
    SimpleCache<String> cache = new SimpleCache<>(node -> XdsPublisher.GROUP);
    health.setStatus("", ServingStatus.NOT_SERVING);
    this.publisher =
        new XdsPublisher(cache, executor, config.clock, () -> health.setStatus("", ServingStatus.SERVING));
    this.metrics = new XdsMetrics(config.meterRegistry, publisher);
    XdsCallbacks callbacks = new XdsCallbacks(metrics);
    this.discovery = new V3DiscoveryServer(callbacks, new WatchGuard(cache, callbacks));
    this.served =
        new ServedServices(config.connection, config.layout, config.services, publisher, executor);
  }

  public static Builder builder(EtcdConnection connection) {
    return new Builder(connection);
  }

  /** Binds the port and starts watching etcd. */
  public XdsServer start() {
    synchronized (lock) {
      checkState(server == null && !closed, "already started");
      ServerCredentials credentials =
          config.certChain == null
              ? InsecureServerCredentials.create()
              : tlsCredentials(config.certChain, config.privateKey);
      Server s =
          NettyServerBuilder.forAddress(new InetSocketAddress(config.host, config.port), credentials)
              .addService(discovery.getAggregatedDiscoveryServiceImpl())
              .addService(health.getHealthService())
              // xDS streams live as long as their clients: let them send keepalives.
              .permitKeepAliveTime(10, TimeUnit.SECONDS)
              .permitKeepAliveWithoutCalls(true)
              .build();
      try {
        s.start();
      } catch (IOException e) {
        throw new UncheckedIOException("xds: cannot listen on " + config.host + ":" + config.port, e);
      }
      server = s;
      served.start();
      log.info("xDS control plane on port {}, services {}, etcd {}",
          port(), config.services == null ? "all" : config.services, config.connection.endpointsString());
      return this;
    }
  }

  private static ServerCredentials tlsCredentials(Path certChain, Path key) {
    try {
      return TlsServerCredentials.create(certChain.toFile(), key.toFile());
    } catch (IOException e) {
      throw new IllegalArgumentException("tls: cannot read " + certChain + " or " + key + ": " + e.getMessage(), e);
    }
  }

  /** The port served (the bound one when built with port 0). */
  public int port() {
    synchronized (lock) {
      checkState(server != null, "not started");
      return ((InetSocketAddress) server.getListenSockets().get(0)).getPort();
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
      if (server != null) {
        server.shutdownNow();
        try {
          server.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
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

    /** Serve TLS with this certificate chain and private key (PEM files). */
    public Builder tls(Path certChain, Path privateKey) {
      once("tls");
      this.certChain = requireNonNull(certChain, "certChain");
      this.privateKey = requireNonNull(privateKey, "privateKey");
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

    public XdsServer build() {
      return new XdsServer(this);
    }
  }
}
