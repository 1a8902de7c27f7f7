package io.steelyard.spring;

import static java.util.Objects.requireNonNull;

import io.etcd.jetcd.Client;
import io.grpc.Server;
import io.grpc.protobuf.services.HealthStatusManager;
import io.steelyard.agent.AdvertisedAddress;
import io.steelyard.agent.RegistrationHealth;
import io.steelyard.agent.RegistrationState;
import io.steelyard.agent.ServiceRegistration;
import io.steelyard.agent.ShutdownSequence;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.admin.InstanceStore;
import io.steelyard.registry.admin.InstanceWrite;
import io.steelyard.registry.admin.RegisteredInstance;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.IntSupplier;
import javax.annotation.Nullable;
import javax.annotation.concurrent.GuardedBy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.ApplicationListener;
import org.springframework.context.SmartLifecycle;
import org.springframework.grpc.server.lifecycle.GrpcServerStartedEvent;

/**
 * Registers this application's Spring gRPC server in etcd once it listens, and deregisters it
 * first thing at shutdown. The starter makes one when a Spring gRPC network server is configured
 * and {@code steelyard.registration.enabled} is not {@code false}; inject it to read the
 * registration or to wait for it.
 *
 * <pre>{@code
 * @Bean
 * ApplicationRunner ready(GrpcServerRegistration registration) {
 *   return args -> registration.registered()
 *       .thenRun(() -> log.info("registered as {}", registration.address().orElseThrow()));
 * }
 * }</pre>
 *
 * <p><b>Start.</b> Spring gRPC's {@code GrpcServerLifecycle} starts the server (the real port is
 * known then, also with {@code spring.grpc.server.port=0}) and publishes a {@link
 * GrpcServerStartedEvent}; this lifecycle starts right after it and registers {@code HOST:PORT}
 * ({@link ServiceRegistration#start()}). It waits for the key up to {@code
 * steelyard.registration.await-on-startup} (default 5s), so the application's runners and its
 * readiness come after the key, and fails the startup with the reason when etcd does not take the
 * key in time; with {@code 0} it does not wait, and etcd being down delays the key, never the
 * application. The gRPC health service ({@link HealthStatusManager}, when Spring
 * gRPC provides one) is NOT_SERVING until the key is in etcd ({@link RegistrationHealth}).
 *
 * <p><b>Stop</b> follows the agent's {@link ShutdownSequence}: health NOT_SERVING; the lease
 * revoked (the key is gone, so discovery clients drop this instance); the drain delay ({@code
 * steelyard.registration.drain-delay}) for them to notice ({@link
 * ShutdownSequence#deregisterAndDrain}); then Spring gRPC's own graceful stop ({@code
 * server.shutdown()}, up to {@code spring.grpc.server.shutdown-grace-period} for calls in flight,
 * then {@code shutdownNow()}), which also publishes Spring gRPC's shutdown events. Why that order
 * holds: this bean has the server lifecycle's phase ({@code
 * Integer.MAX_VALUE}, the last to start and the first to stop) and is recorded as its dependent,
 * and Spring's {@code DefaultLifecycleProcessor} starts a bean's dependencies before it and stops
 * its dependents before it. {@link #stop()} returns only after the drain delay. gRPC services may
 * inject this bean (the dependency is recorded by name, not by injection, so there is no cycle).
 *
 * <p><b>Threading.</b> Thread-safe. Lifecycle methods run on Spring's threads; the registration's
 * own work runs on the agent's registration thread.
 */
public final class GrpcServerRegistration
    implements SmartLifecycle, ApplicationListener<GrpcServerStartedEvent> {

  private static final Logger logger = LoggerFactory.getLogger(GrpcServerRegistration.class);

  private final SteelyardSettings.RegistrationSettings settings;
  private final EtcdConnection etcd;
  private final KeyLayout layout;
  private final Function<String, String> environment;
  private final ObjectProvider<HealthStatusManager> health;
  private final IntSupplier phase;
  private final CompletableFuture<Void> firstRegistered = new CompletableFuture<>();
  private final AtomicLong registrations = new AtomicLong();

  @Nullable private volatile Server server;
  @Nullable private volatile ServiceRegistration registration;
  @Nullable private volatile RegistrationHealth healthFollower;
  private volatile boolean running;

  @GuardedBy("this")
  @Nullable
  private Client operatorClient;

  /** Binders given to {@link #bindEach}, each with what it bound to the current registration. */
  @GuardedBy("bindings")
  private final List<Bound> bindings = new ArrayList<>();

  private static final class Bound {
    final Function<ServiceRegistration, AutoCloseable> binder;
    @Nullable AutoCloseable handle;

    Bound(Function<ServiceRegistration, AutoCloseable> binder) {
      this.binder = binder;
    }
  }

  GrpcServerRegistration(
      SteelyardSettings.RegistrationSettings settings,
      EtcdConnection etcd,
      KeyLayout layout,
      Function<String, String> environment,
      ObjectProvider<HealthStatusManager> health,
      IntSupplier phase) {
    this.settings = requireNonNull(settings, "settings");
    this.etcd = requireNonNull(etcd, "etcd");
    this.layout = requireNonNull(layout, "layout");
    this.environment = requireNonNull(environment, "environment");
    this.health = requireNonNull(health, "health");
    this.phase = requireNonNull(phase, "phase");
  }

  /** Remembers the network server Spring gRPC started (an in-process server has no port). */
  @Override
  public void onApplicationEvent(GrpcServerStartedEvent event) {
    if (listenAddress(event.getServer()) != null) {
      server = event.getServer();
    }
  }

  @Override
  public void start() {
    if (running) {
      return;
    }
    Server s = server;
    InetSocketAddress listen = s == null ? null : listenAddress(s);
    if (listen == null) {
      logger.warn("No network gRPC server was started in this application: {} is not registered",
          settings.service());
      running = true;
      return;
    }
    String address = address(listen);
    ServiceRegistration reg = settings.builder(etcd, layout, address).listener(this::onState).build();
    HealthStatusManager h = health.getIfAvailable();
    if (h != null) {
      healthFollower = RegistrationHealth.follow(h, reg, List.of());
    }
    registration = reg;
    running = true;
    bindAll(reg);
    logger.info("Registering {} at {} in etcd {} (key {}, weight {}, ttl {}s)",
        reg.service(), address, etcd.endpointsString(), reg.key(), reg.weight(), reg.ttlSeconds());
    awaitOnStartup(reg, reg.start());
  }

  /**
   * Holds the application's startup until the key is in etcd, at most {@code
   * steelyard.registration.await-on-startup}: Spring runs the runners and reports the application
   * ready only after every lifecycle started, so they find this server registered. When the key
   * is not there in time, or etcd refused it, the registration is closed and startup fails with
   * the reason.
   */
  private void awaitOnStartup(ServiceRegistration reg, CompletableFuture<Void> started) {
    Duration bound = settings.awaitOnStartup();
    if (bound.isZero()) {
      return;
    }
    String reason;
    try {
      started.get(bound.toMillis(), TimeUnit.MILLISECONDS);
      return;
    } catch (TimeoutException e) {
      reason = "etcd " + etcd.endpointsString() + " did not take the key within " + bound.toMillis()
          + " ms (state " + reg.state() + ")";
    } catch (ExecutionException e) {
      reason = "etcd " + etcd.endpointsString() + " refused it: " + e.getCause().getMessage();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      reason = "interrupted while waiting for etcd";
    }
    running = false;
    reg.close();
    throw new RegistrationNotReadyException(reg.service() + " at " + reg.address()
        + " is not registered: " + reason);
  }

  /** The explicit address, else the explicit host, else the agent's rule (AdvertisedAddress). */
  private String address(InetSocketAddress listen) {
    if (settings.address() != null) {
      return settings.address();
    }
    if (settings.host() != null) {
      return AdvertisedAddress.hostAndPort(settings.host(), listen.getPort()); // checked at startup
    }
    try {
      return AdvertisedAddress.from(environment).withHostVariable(settings.hostVariable()).of(listen);
    } catch (IllegalArgumentException e) {
      throw new InvalidSteelyardPropertyException(
          SteelyardProperties.PREFIX + ".registration.host-variable", e);
    }
  }

  private void onState(RegistrationState state) {
    if (state == RegistrationState.REGISTERED) {
      registrations.incrementAndGet();
      firstRegistered.complete(null);
    }
  }

  /**
   * Health NOT_SERVING, deregisters (revokes the lease) and waits the drain delay; the server's
   * own graceful stop comes after this returns. See the class comment for why the order holds.
   */
  @Override
  public void stop() {
    if (!running) {
      return;
    }
    running = false;
    ServiceRegistration reg = registration;
    closeOperatorClient();
    if (reg == null) {
      return;
    }
    // Steps 1 to 3 of the agent's shutdown sequence; Spring gRPC's lifecycle, stopped right
    // after this bean, carries out the server's own steps (see the class comment).
    ShutdownSequence.of(reg, settings.drainDelay()).deregisterAndDrain(healthFollower);
  }

  @Override
  public boolean isRunning() {
    return running;
  }

  /** The phase of Spring gRPC's server lifecycle, so both stop in one group (see the class comment). */
  @Override
  public int getPhase() {
    return phase.getAsInt();
  }

  /**
   * Calls {@code binder} with each agent registration this bean makes: now, if the server already
   * listens, else when it starts; a restart makes a new registration, and what {@code binder}
   * returned for the old one is closed first. The starter binds {@code AgentMetrics} this way, so
   * the registration's meters follow the registration and are defined once (by the agent).
   *
   * <pre>{@code
   * registration.bindEach(AgentMetrics.of(meterRegistry)::bind);
   * }</pre>
   */
  public void bindEach(Function<ServiceRegistration, AutoCloseable> binder) {
    Bound b = new Bound(requireNonNull(binder, "binder"));
    synchronized (bindings) {
      bindings.add(b);
      ServiceRegistration reg = registration;
      if (reg != null) {
        b.handle = binder.apply(reg);
      }
    }
  }

  private void bindAll(ServiceRegistration reg) {
    synchronized (bindings) {
      for (Bound b : bindings) {
        closeQuietly(b.handle);
        b.handle = b.binder.apply(reg);
      }
    }
  }

  private void closeQuietly(@Nullable AutoCloseable handle) {
    if (handle == null) {
      return;
    }
    try {
      handle.close();
    } catch (Exception e) {
      logger.warn("Closing what was bound to the previous registration of {} failed",
          settings.service(), e);
    }
  }

  /** The service name this application registers as. */
  public String service() {
    return settings.service();
  }

  /** The agent's registration, once {@link #start()} made it (the server listens). */
  public Optional<ServiceRegistration> registration() {
    return Optional.ofNullable(registration);
  }

  /** The registered {@code host:port}, once known. */
  public Optional<String> address() {
    return registration().map(ServiceRegistration::address);
  }

  /** The registration's state; {@link RegistrationState#NEW} before the server listens. */
  public RegistrationState state() {
    ServiceRegistration reg = registration;
    return reg == null ? RegistrationState.NEW : reg.state();
  }

  /**
   * Completes when the key is first in etcd. Never fails: a registration that cannot reach etcd,
   * or that etcd refuses ({@link RegistrationState#REFUSED}, see {@link
   * ServiceRegistration#refusal()}), keeps trying in the background.
   */
  public CompletableFuture<Void> registered() {
    return firstRegistered.copy();
  }

  /** How often the key was written on a new lease: once, plus once per recovery. */
  public long registrations() {
    return registrations.get();
  }

  /**
   * Sets the weight, on the registration's lease, and waits for etcd's answer; see {@link
   * ServiceRegistration#setWeightAndWait}.
   *
   * @throws IllegalArgumentException if {@code weight} is not in {@code 0..1000000}
   * @throws IllegalStateException before the server listens or after shutdown began
   * @throws RegistryException if etcd refused, did not answer, or the key changed meanwhile
   */
  public void setWeight(int weight) {
    requireRegistration().setWeightAndWait(weight);
  }

  /**
   * What etcd holds for this instance now: value (address, weight, metadata, format), lease, TTL
   * left, the weight before a drain.
   *
   * @throws IllegalStateException before the server listens or after shutdown began
   * @throws RegistryException NOT_REGISTERED when the key is missing, or etcd's failure
   */
  public RegisteredInstance read() {
    ServiceRegistration reg = requireRegistration();
    return withStore(store -> store.require(reg.service(), reg.address()));
  }

  /**
   * Carries out an operator's write to this instance ({@code steelyard weight set}, {@code drain},
   * {@code undrain}, {@code deregister} from the actuator endpoint or a console): through the
   * operator's path, {@link InstanceStore#apply}, as the CLI does, except a weight, which goes
   * through the registration ({@link ServiceRegistration#setWeightAndWait}) so that the
   * registration holds it at once and a weight source pauses. A drain is kept by the registration
   * across lease recoveries (it learns the weight through its key watch).
   *
   * <pre>{@code
   * registration.apply(InstanceWrite.drain("greeter", registration.address().orElseThrow()));
   * }</pre>
   *
   * @throws IllegalArgumentException if {@code write} is for another instance
   * @throws IllegalStateException before the server listens or after shutdown began
   * @throws RegistryException if the key is missing or changed meanwhile, etcd refused or did not
   *     answer
   */
  public InstanceWrite.Result apply(InstanceWrite write) {
    ServiceRegistration reg = requireRegistration();
    if (!write.service().equals(reg.service()) || !write.address().equals(reg.address())) {
      throw new IllegalArgumentException(
          "write: " + write + " (expected: a write to " + reg.service() + " " + reg.address() + ")");
    }
    if (write.kind() != InstanceWrite.Kind.SET_WEIGHT) {
      return withStore(store -> store.apply(write));
    }
    RegisteredInstance before = read();
    reg.setWeightAndWait(write.weight().getAsInt());
    return new InstanceWrite.Result(write, reg.key(), before, read());
  }

  private ServiceRegistration requireRegistration() {
    ServiceRegistration reg = registration;
    if (reg == null || !running) {
      throw new IllegalStateException(settings.service() + " is not registered by this application"
          + (running ? " yet: the gRPC server is not listening" : ": it is stopped"));
    }
    return reg;
  }

  // Operator actions are rare: one client, made on first use and closed at stop. The
  // registration's own client is private to it.
  private <T> T withStore(Function<InstanceStore, T> op) {
    Client client;
    synchronized (this) {
      if (!running) {
        throw new RegistryException(RegistryException.Kind.NOT_REGISTERED,
            settings.service() + " is stopping", null);
      }
      if (operatorClient == null) {
        operatorClient = etcd.connect();
      }
      client = operatorClient;
    }
    return op.apply(new InstanceStore(
        client, layout, Duration.ofMillis(InstanceStore.DEFAULT_TIMEOUT_MILLIS)));
  }

  private void closeOperatorClient() {
    Client c;
    synchronized (this) {
      c = operatorClient;
      operatorClient = null;
    }
    if (c != null) {
      c.close();
    }
  }

  @Nullable
  private static InetSocketAddress listenAddress(Server server) {
    for (SocketAddress a : server.getListenSockets()) {
      if (a instanceof InetSocketAddress inet) {
        return inet;
      }
    }
    return null;
  }

  @Override
  public String toString() {
    ServiceRegistration reg = registration;
    return "GrpcServerRegistration{" + (reg != null ? reg : settings.service()) + "}";
  }
}
