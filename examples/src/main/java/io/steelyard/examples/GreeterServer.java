package io.steelyard.examples;

import static com.google.common.base.Preconditions.checkArgument;
import static com.google.common.base.Preconditions.checkState;
import static java.util.Objects.requireNonNull;

import com.google.common.collect.ImmutableMap;
import com.google.common.net.HostAndPort;
import io.grpc.Server;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.steelyard.agent.AgentMetrics;
import io.steelyard.agent.RegisteredServer;
import io.steelyard.agent.ServerMeters;
import io.steelyard.agent.ServiceRegistration;
import io.steelyard.agent.ServiceRegistrationBuilder;
import io.steelyard.examples.proto.GreeterGrpc;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.Localities;
import io.steelyard.registry.MetricsEndpoint;
import io.steelyard.registry.Validation;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The example server: {@code Greeter/SayHello} plus {@code grpc.health.v1}, registered in etcd
 * through the embedded agent. Every reply names the server's address, so a client can count how
 * its calls were spread.
 *
 * <pre>{@code
 * GreeterServer server = GreeterServer.builder()
 *     .endpoints("http://127.0.0.1:2379").service("greeter").weight(5)
 *     .build().start();              // port 0 by default: any free port
 * String address = server.address(); // the HOST:PORT it registered
 * server.close();                    // graceful, see below
 * }</pre>
 *
 * <p>{@link #close()} shuts down in the order clients need: health NOT_SERVING, deregister
 * (revoke the lease), wait the drain delay so clients stop picking this server, stop accepting
 * calls, wait up to the grace period for calls in flight, then cancel what is left.
 *
 * <p>Also the API the integration tests drive in-process: {@link #connectionsAccepted()} counts
 * the transports that became ready, so a test can prove that a weight change opened no new
 * connection. Thread-safe.
 */
public final class GreeterServer implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(GreeterServer.class);

  /** Default wait between deregistering and refusing new calls, in milliseconds: {@value}. */
  public static final long DEFAULT_DRAIN_DELAY_MILLIS = 1_000;
  /** Default wait for calls in flight after shutdown before cancelling them, in ms: {@value}. */
  public static final long DEFAULT_GRACE_MILLIS = 5_000;
  /** Default lease TTL, in seconds: {@value}. */
  public static final long DEFAULT_TTL_SECONDS = 10;
  /** Default host to listen on and advertise: {@value}. */
  public static final String DEFAULT_HOST = "127.0.0.1";

  private final Builder config;
  private final HealthStatusManager health = new HealthStatusManager();
  private final GreeterService greeter;
  private final AtomicLong connections = new AtomicLong();
  private final Object lock = new Object();
  @Nullable private Server server; // guarded by lock
  @Nullable private RegisteredServer registered; // guarded by lock; null with register(false)
  @Nullable private MetricsEndpoint metrics; // guarded by lock; null without metricsPort
  @Nullable private PrometheusMeterRegistry meters; // guarded by lock; what metrics serves
  @Nullable private volatile String address;
  private boolean closing; // guarded by lock

  private GreeterServer(Builder config) {
    this.config = config;
    this.greeter = new GreeterService(config.faults);
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * Binds, starts serving, marks health SERVING and, unless built with {@code register(false)},
   * registers the address in etcd and waits until the key is written.
   *
   * @return this
   * @throws UncheckedIOException if the port cannot be bound
   * @throws IllegalStateException if registration fails
   */
  public GreeterServer start() {
    synchronized (lock) {
      checkState(server == null && !closing, "start: already started or closed");
      Server s;
      try {
        NettyServerBuilder nsb =
            NettyServerBuilder.forAddress(new InetSocketAddress(config.host, config.port))
                .addService(greeter)
                .addService(health.getHealthService())
                .addTransportFilter(new ConnectionCounter(connections));
        if (config.metricsPort >= 0) {
          meters = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
          metrics = MetricsEndpoint.start(config.host, config.metricsPort, meters::scrape);
          nsb.addStreamTracerFactory(AgentMetrics.of(meters).serverCalls(config.service));
        }
        s = nsb.build().start();
      } catch (IOException e) {
        closeMetrics();
        throw new UncheckedIOException(
            "cannot listen on " + HostAndPort.fromParts(config.host, config.port), e);
      }
      int port = ((InetSocketAddress) s.getListenSockets().get(0)).getPort();
      String self = HostAndPort.fromParts(config.host, port).toString();
      greeter.address(self);
      address = self;
      server = s;
      if (config.register) {
        registered = register(s, self);
      } else {
        // Nobody else drives health when we do not register (a sidecar may register us).
        health.setStatus("", ServingStatus.SERVING);
        health.setStatus(GreeterGrpc.SERVICE_NAME, ServingStatus.SERVING);
      }
      log.info("greeter {} serving {} (weight {}, registered: {})",
          self, config.service, config.weight, config.register);
      return this;
    }
  }

  /**
   * The embedded agent, in one statement: the registration plus {@link RegisteredServer}, which
   * drives health with it and owns the graceful shutdown order.
   */
  private RegisteredServer register(Server s, String self) {
    ServiceRegistrationBuilder rb =
        ServiceRegistration.builder(config.connection, config.service, self)
            .keyLayout(config.layout)
            .weight(config.weight)
            .ttl(config.ttl)
            // Advertised for `steelyard top` (JSON values carry metadata; docs/metrics.md).
            .metadata(metrics == null ? config.metadata : ImmutableMap.<String, String>builder()
                .putAll(config.metadata).put(ServerMeters.METADATA_KEY, metrics.url()).buildKeepingLast());
    if (config.zone != null) {
      rb.zone(config.zone);
    }
    ServiceRegistration registration = rb.build();
    if (metrics != null) {
      AgentMetrics.of(meters).bind(registration);
    }
    RegisteredServer rs =
        RegisteredServer.builder(s, registration)
            .health(health)
            .healthServiceNames(GreeterGrpc.SERVICE_NAME)
            .drainDelay(config.drainDelay)
            .gracePeriod(config.grace)
            .build();
    try {
      rs.start();
      // Registration retries forever in the background; a server that prints READY should be
      // findable, so wait (bounded) for the key to be in etcd.
      registration.registered().get(config.registerTimeout.toMillis(), TimeUnit.MILLISECONDS);
      return rs;
    } catch (ExecutionException e) {
      registration.close();
      s.shutdownNow();
      // etcd refused (permission, credentials, TLS): its one-line reason says what to fix.
      throw new IllegalStateException(
          "cannot register " + self + " as " + config.service + ": "
              + (e.getCause() != null ? e.getCause().getMessage() : e.getMessage()), e);
    } catch (IOException | TimeoutException | RuntimeException e) {
      registration.close();
      s.shutdownNow();
      throw new IllegalStateException(
          "cannot register " + self + " as " + config.service + " in etcd at " + config.connection.endpointsString()
              + " within " + Durations.format(config.registerTimeout) + ": " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      registration.close();
      s.shutdownNow();
      throw new IllegalStateException("interrupted while registering " + self, e);
    }
  }

  /** The {@code HOST:PORT} this server listens on and registers. */
  public String address() {
    String a = address;
    checkState(a != null, "address: not started");
    return a;
  }

  /** The port this server listens on. */
  public int port() {
    return HostAndPort.fromString(address()).getPort();
  }

  public String service() {
    return config.service;
  }

  /** {@code http://HOST:PORT/metrics} while serving metrics (built with {@code metricsPort}), else null. */
  @Nullable
  public String metricsUrl() {
    synchronized (lock) {
      return metrics == null ? null : metrics.url();
    }
  }

  private void closeMetrics() {
    MetricsEndpoint m;
    PrometheusMeterRegistry r;
    synchronized (lock) {
      m = metrics;
      r = meters;
      metrics = null;
      meters = null;
    }
    if (m != null) {
      m.close();
    }
    if (r != null) {
      r.close();
    }
  }

  /** The weight registered (the configured one until {@link #setWeight} changes it). */
  public int weight() {
    synchronized (lock) {
      return registered != null ? registered.registration().weight() : config.weight;
    }
  }

  /** Rewrites this server's weight in etcd, on the same lease, and waits for etcd's answer. */
  public void setWeight(int weight) {
    Validation.checkWeight(weight);
    RegisteredServer r;
    synchronized (lock) {
      checkState(registered != null, "setWeight: not registered");
      r = registered;
    }
    r.registration().setWeightAndWait(weight);
  }

  /** {@code SayHello} calls answered so far. */
  public long callsServed() {
    return greeter.calls();
  }

  /** Client connections (transports) that became ready since start. */
  public long connectionsAccepted() {
    return connections.get();
  }

  /** Whether {@link #close()} has begun. */
  public boolean isClosing() {
    synchronized (lock) {
      return closing;
    }
  }

  /** Blocks until the server has terminated (after {@link #close()} from another thread). */
  public void awaitTermination() throws InterruptedException {
    Server s;
    synchronized (lock) {
      s = server;
    }
    if (s != null) {
      s.awaitTermination();
    }
  }

  /**
   * Graceful shutdown: health NOT_SERVING, deregister, drain delay, stop accepting calls, wait up
   * to the grace period for calls in flight, cancel the rest. Blocks for about drain delay plus
   * grace at most. Idempotent.
   */
  @Override
  public void close() {
    Server s;
    RegisteredServer r;
    synchronized (lock) {
      if (closing) {
        return;
      }
      closing = true;
      s = server;
      r = registered;
    }
    if (s == null) {
      return;
    }
    if (r != null) {
      r.shutdown(); // the agent's order, see the class comment
    } else {
      // Unregistered: the same order minus the deregistration.
      health.enterTerminalState();
      try {
        if (!config.drainDelay.isZero()) {
          TimeUnit.MILLISECONDS.sleep(config.drainDelay.toMillis());
        }
        s.shutdown();
        if (!s.awaitTermination(config.grace.toMillis(), TimeUnit.MILLISECONDS)) {
          log.warn("greeter {}: calls still running after {}, cancelling them", address, config.grace);
          s.shutdownNow();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        s.shutdownNow();
      }
    }
    closeMetrics();
    greeter.close();
    log.info("greeter {} stopped", address);
  }

  /** Stops at once: deregisters, then cancels every call. For tests and failed starts. */
  public void shutdownNow() {
    Server s;
    RegisteredServer r;
    synchronized (lock) {
      closing = true;
      s = server;
      r = registered;
    }
    health.enterTerminalState();
    if (r != null) {
      r.registration().close();
    }
    if (s != null) {
      s.shutdownNow();
    }
    closeMetrics();
    greeter.close();
  }

  /**
   * Configuration; every setting has a default except what etcd needs. A setting given twice is
   * refused ({@link IllegalStateException}).
   */
  public static final class Builder {
    EtcdConnection connection = EtcdConnection.fromEnvironment();
    KeyLayout layout = KeyLayout.defaults();
    String service = "greeter";
    String host = DEFAULT_HOST;
    int port = 0;
    int weight = Validation.DEFAULT_WEIGHT;
    boolean register = true;
    Duration ttl = Duration.ofSeconds(DEFAULT_TTL_SECONDS);
    Duration drainDelay = Duration.ofMillis(DEFAULT_DRAIN_DELAY_MILLIS);
    Duration grace = Duration.ofMillis(DEFAULT_GRACE_MILLIS);
    Duration registerTimeout = Duration.ofSeconds(30);
    int metricsPort = -1;
    @Nullable String zone;
    Map<String, String> metadata = Map.of();
    GreeterFaults faults = GreeterFaults.NONE;
    private final Set<String> given = new HashSet<>();

    Builder() {}

    /** The project's rule for builders: a setting given twice is a mistake, refused at once. */
    private void once(String setting) {
      checkState(given.add(setting), "%s already set", setting);
    }

    /**
     * Serve the meters of the agent and of the calls answered at {@code
     * http://HOST:PORT/metrics} (0: any free port), and advertise that URL in the registration's
     * metadata (key {@code metrics}); default: no metrics.
     */
    public Builder metricsPort(int port) {
      once("metricsPort");
      checkArgument(port >= 0 && port <= 65535, "metricsPort: %s (expected: 0..65535)", port);
      this.metricsPort = port;
      return this;
    }

    /** etcd endpoints, comma-separated URLs, without auth or TLS; default {@code STEELYARD_ETCD_ENDPOINTS}. */
    public Builder endpoints(String endpoints) {
      return connection(EtcdConnection.of(endpoints));
    }

    /** How to reach etcd, with auth and TLS as needed; default {@code STEELYARD_ETCD_ENDPOINTS}. */
    public Builder connection(EtcdConnection connection) {
      once("connection");
      this.connection = requireNonNull(connection, "connection");
      return this;
    }

    /** The registry's key prefix; default {@value KeyLayout#DEFAULT_PREFIX}. */
    public Builder layout(KeyLayout layout) {
      once("layout");
      this.layout = requireNonNull(layout, "layout");
      return this;
    }

    /** Service name to register under; default {@code greeter}. */
    public Builder service(String service) {
      once("service");
      this.service = Validation.checkServiceName(service);
      return this;
    }

    /** Host to listen on and advertise; default {@value #DEFAULT_HOST}. */
    public Builder host(String host) {
      once("host");
      this.host = requireNonNull(host, "host");
      return this;
    }

    /** Port to listen on; 0 (the default) picks any free port. */
    public Builder port(int port) {
      once("port");
      checkArgument(port >= 0 && port <= 65535, "port: %s (expected: 0..65535)", port);
      this.port = port;
      return this;
    }

    public Builder weight(int weight) {
      once("weight");
      this.weight = Validation.checkWeight(weight);
      return this;
    }

    /** The zone to register in (metadata {@code zone}, docs/localities.md); default none. */
    public Builder zone(String zone) {
      once("zone");
      this.zone = Localities.checkName("zone", zone);
      return this;
    }

    /** Metadata to register (e.g. {@code version=v2}, read by selectors and splits); default none. */
    public Builder metadata(Map<String, String> metadata) {
      once("metadata");
      this.metadata = Map.copyOf(metadata);
      return this;
    }

    /** Calls to fail and answers to delay on purpose; default {@link GreeterFaults#NONE}. */
    public Builder faults(GreeterFaults faults) {
      once("faults");
      this.faults = requireNonNull(faults, "faults");
      return this;
    }

    /** Whether to register in etcd; {@code false} serves only (e.g. behind a CLI sidecar). */
    public Builder register(boolean register) {
      once("register");
      this.register = register;
      return this;
    }

    public Builder ttl(Duration ttl) {
      once("ttl");
      checkArgument(ttl.getSeconds() >= 2, "ttl: %s (expected: >= 2s)", ttl);
      this.ttl = ttl;
      return this;
    }

    public Builder drainDelay(Duration drainDelay) {
      once("drainDelay");
      checkArgument(!drainDelay.isNegative(), "drainDelay: %s (expected: >= 0)", drainDelay);
      this.drainDelay = drainDelay;
      return this;
    }

    public Builder grace(Duration grace) {
      once("grace");
      checkArgument(!grace.isNegative(), "grace: %s (expected: >= 0)", grace);
      this.grace = grace;
      return this;
    }

    /** How long {@link GreeterServer#start()} waits for the key to be in etcd; default 30 s. */
    public Builder registerTimeout(Duration registerTimeout) {
      once("registerTimeout");
      checkArgument(!registerTimeout.isNegative() && !registerTimeout.isZero(),
          "registerTimeout: %s (expected: > 0)", registerTimeout);
      this.registerTimeout = registerTimeout;
      return this;
    }

    public GreeterServer build() {
      return new GreeterServer(this);
    }
  }
}
