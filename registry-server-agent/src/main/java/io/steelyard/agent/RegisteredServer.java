package io.steelyard.agent;

import static com.google.common.base.Preconditions.checkArgument;
import static com.google.common.base.Preconditions.checkState;
import static java.util.Objects.requireNonNull;

import io.grpc.Server;
import io.grpc.protobuf.services.HealthStatusManager;
import java.io.IOException;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.annotation.Nullable;

/**
 * Ties a {@link ServiceRegistration} to a grpc-java {@link Server}: registers once the server
 * serves, drives a {@link HealthStatusManager} in step with the registration, and shuts down in
 * the order that lets clients move away without a failed call.
 *
 * <pre>{@code
 * HealthStatusManager health = new HealthStatusManager();
 * Server server = ServerBuilder.forPort(50051).addService(greeter).addService(health.getHealthService()).build();
 * ServiceRegistration reg = ServiceRegistration.builder(etcd, "greeter", "10.0.0.7:50051").weight(5).build();
 * RegisteredServer rs = RegisteredServer.start(server, health, reg);   // the one line
 * ...
 * rs.shutdown();   // or RegisteredServer.builder(...).shutdownHook(true) to do it on SIGTERM
 * }</pre>
 *
 * <p><b>Health.</b> The overall status ({@code ""}) and the registration's service name (plus any
 * {@linkplain Builder#healthServiceNames names} given) follow the registration as {@link
 * RegistrationHealth} says: SERVING while REGISTERED or RECOVERING, NOT_SERVING before the first
 * registration, after an operator deleted the key, and from the first step of shutdown on.
 *
 * <p><b>Shutdown</b> follows {@link ShutdownSequence}: health NOT_SERVING (clients with
 * client-side health checking stop picking this server); deregister (the key disappears, so
 * discovery clients drop it); wait the drain delay (default {@value
 * ShutdownSequence#DEFAULT_DRAIN_DELAY_MILLIS} ms) for clients to notice; {@link
 * Server#shutdown()} (GOAWAY: no new calls, in-flight calls finish); await termination up to the
 * grace period (default {@value ShutdownSequence#DEFAULT_GRACE_PERIOD_MILLIS} ms); {@link
 * Server#shutdownNow()} for whatever is left.
 *
 * <p>The builder refuses a setting given twice ({@link IllegalStateException}).
 */
public final class RegisteredServer implements AutoCloseable {

  private final Server server;
  private final ServiceRegistration registration;
  @Nullable private final HealthStatusManager health;
  private final List<String> healthNames;
  @Nullable private volatile RegistrationHealth healthFollower;
  private final ShutdownSequence shutdownSequence;
  private final Duration gracePeriod;
  private final boolean shutdownHook;
  private final AtomicBoolean startCalled = new AtomicBoolean();
  private final AtomicBoolean shutdownCalled = new AtomicBoolean();
  @Nullable private volatile Thread hook;

  private RegisteredServer(Builder b) {
    this.server = b.server;
    this.registration = b.registration;
    this.health = b.health;
    this.healthNames = b.healthNames == null ? List.of() : List.copyOf(b.healthNames);
    this.shutdownSequence =
        ShutdownSequence.of(
            b.registration,
            b.drainDelay != null ? b.drainDelay : Duration.ofMillis(ShutdownSequence.DEFAULT_DRAIN_DELAY_MILLIS));
    this.gracePeriod =
        b.gracePeriod != null ? b.gracePeriod : Duration.ofMillis(ShutdownSequence.DEFAULT_GRACE_PERIOD_MILLIS);
    this.shutdownHook = b.shutdownHook != null && b.shutdownHook;
  }

  /**
   * Starts {@code server} (unless it already runs), then {@code registration}, and drives {@code
   * health} (nullable); no JVM shutdown hook. Call {@link #shutdown()} to stop.
   */
  public static RegisteredServer start(
      Server server, @Nullable HealthStatusManager health, ServiceRegistration registration)
      throws IOException {
    Builder b = builder(server, registration);
    if (health != null) {
      b.health(health);
    }
    return b.build().start();
  }

  public static Builder builder(Server server, ServiceRegistration registration) {
    return new Builder(server, registration);
  }

  /**
   * Starts the server if it is not started yet, then the registration (in the background; see
   * {@link ServiceRegistration#start()}), and installs the shutdown hook if asked for. Only the
   * first call does anything.
   *
   * @throws IOException if the server cannot bind
   */
  public RegisteredServer start() throws IOException {
    if (!startCalled.compareAndSet(false, true)) {
      return this;
    }
    if (!isStarted(server)) {
      server.start();
    }
    if (health != null) {
      healthFollower = RegistrationHealth.follow(health, registration, healthNames);
    }
    registration.start();
    if (shutdownHook) {
      Thread t = new Thread(this::shutdownFromHook, "steelyard-shutdown-" + registration.service());
      hook = t;
      Runtime.getRuntime().addShutdownHook(t);
    }
    return this;
  }

  /**
   * Shuts down gracefully (see the class comment for the order) and returns once the server has
   * terminated or {@code shutdownNow()} was called after the grace period. Idempotent: later calls
   * return at once.
   *
   * @return whether every in-flight call finished within the grace period
   */
  public boolean shutdown() {
    if (!shutdownCalled.compareAndSet(false, true)) {
      return server.isTerminated();
    }
    removeHook();
    RegistrationHealth follower = healthFollower;
    if (follower == null && health != null) {
      // Shut down before start(): the health service still goes NOT_SERVING for good.
      follower = RegistrationHealth.follow(health, registration, healthNames);
    }
    return shutdownSequence.run(server, follower, gracePeriod);
  }

  /** {@link #shutdown()}. */
  @Override
  public void close() {
    shutdown();
  }

  /** Waits for the server to terminate. */
  public void awaitTermination() throws InterruptedException {
    server.awaitTermination();
  }

  public Server server() {
    return server;
  }

  public ServiceRegistration registration() {
    return registration;
  }

  private void shutdownFromHook() {
    hook = null; // the JVM is already running it; removing it now would throw
    shutdown();
  }

  private void removeHook() {
    Thread t = hook;
    if (t != null && t != Thread.currentThread()) {
      hook = null;
      try {
        Runtime.getRuntime().removeShutdownHook(t);
      } catch (IllegalStateException jvmShuttingDown) {
        // The hook runs (or ran) anyway; shutdown() is idempotent.
      }
    }
  }

  private static boolean isStarted(Server server) {
    try {
      server.getListenSockets();
      return true;
    } catch (IllegalStateException notStarted) {
      return false;
    } catch (UnsupportedOperationException unknown) {
      // A Server implementation that cannot tell: getPort() of a started one is not -1.
      return server.getPort() != -1;
    }
  }

  /** Builds a {@link RegisteredServer}. */
  public static final class Builder {
    private final Server server;
    private final ServiceRegistration registration;
    @Nullable private HealthStatusManager health;
    @Nullable private Set<String> healthNames;
    @Nullable private Duration drainDelay;
    @Nullable private Duration gracePeriod;
    @Nullable private Boolean shutdownHook;

    private Builder(Server server, ServiceRegistration registration) {
      this.server = requireNonNull(server, "server");
      this.registration = requireNonNull(registration, "registration");
    }

    /** The health service to drive (its {@code getHealthService()} must be added to the server). */
    public Builder health(HealthStatusManager health) {
      checkState(this.health == null, "health already set");
      this.health = requireNonNull(health, "health");
      return this;
    }

    /**
     * More service names whose health follows the registration (e.g. the gRPC service's full
     * name {@code helloworld.Greeter}); {@code ""} and the registration's service name always do.
     */
    public Builder healthServiceNames(String... names) {
      checkState(healthNames == null, "healthServiceNames already set");
      Set<String> set = new LinkedHashSet<>();
      for (String n : names) {
        set.add(requireNonNull(n, "name"));
      }
      healthNames = set;
      return this;
    }

    /** Wait between deregistration and {@code server.shutdown()}; default 1 s; zero allowed. */
    public Builder drainDelay(Duration delay) {
      checkState(drainDelay == null, "drainDelay already set");
      requireNonNull(delay, "drainDelay");
      checkArgument(!delay.isNegative(), "drainDelay: %s (expected: >= 0)", delay);
      this.drainDelay = delay;
      return this;
    }

    /** Wait for in-flight calls after {@code server.shutdown()}; default 10 s. */
    public Builder gracePeriod(Duration grace) {
      checkState(gracePeriod == null, "gracePeriod already set");
      requireNonNull(grace, "gracePeriod");
      checkArgument(!grace.isNegative(), "gracePeriod: %s (expected: >= 0)", grace);
      this.gracePeriod = grace;
      return this;
    }

    /** Whether to run {@link #shutdown()} from a JVM shutdown hook (SIGTERM, SIGINT); default no. */
    public Builder shutdownHook(boolean install) {
      checkState(shutdownHook == null, "shutdownHook already set");
      this.shutdownHook = install;
      return this;
    }

    public RegisteredServer build() {
      return new RegisteredServer(this);
    }
  }
}
