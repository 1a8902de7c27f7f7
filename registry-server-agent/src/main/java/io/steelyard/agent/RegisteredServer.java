package io.steelyard.agent;

import static com.google.common.base.Preconditions.checkArgument;
import static java.util.Objects.requireNonNull;

import io.grpc.Server;
import io.grpc.protobuf.services.HealthStatusManager;
import java.io.IOException;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
 * <p><b>Shutdown</b>, in this order: health NOT_SERVING (clients with client-side health checking
 * stop picking this server); revoke the lease (the key disappears, so discovery clients drop it);
 * wait the drain delay (default {@value #DEFAULT_DRAIN_DELAY_MILLIS} ms) for clients to notice;
 * {@link Server#shutdown()} (GOAWAY: no new calls, in-flight calls finish); await termination up
 * to the grace period (default {@value #DEFAULT_GRACE_PERIOD_MILLIS} ms); {@link
 * Server#shutdownNow()} for whatever is left.
 */
public final class RegisteredServer implements AutoCloseable {

  /** Default wait between deregistration and {@code server.shutdown()}, in milliseconds: {@value}. */
  public static final long DEFAULT_DRAIN_DELAY_MILLIS = 1_000;
  /** Default wait for in-flight calls after {@code server.shutdown()}, in milliseconds: {@value}. */
  public static final long DEFAULT_GRACE_PERIOD_MILLIS = 10_000;

  private static final Logger logger = LoggerFactory.getLogger(RegisteredServer.class);

  private final Server server;
  private final ServiceRegistration registration;
  @Nullable private final HealthStatusManager health;
  private final List<String> healthNames;
  @Nullable private volatile RegistrationHealth healthFollower;
  private final Duration drainDelay;
  private final Duration gracePeriod;
  private final boolean shutdownHook;
  private final AtomicBoolean startCalled = new AtomicBoolean();
  private final AtomicBoolean shutdownCalled = new AtomicBoolean();
  @Nullable private volatile Thread hook;

  private RegisteredServer(Builder b) {
    this.server = b.server;
    this.registration = b.registration;
    this.health = b.health;
    this.healthNames = List.copyOf(b.healthNames);
    this.drainDelay = b.drainDelay;
    this.gracePeriod = b.gracePeriod;
    this.shutdownHook = b.shutdownHook;
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
    String who = registration.service() + " at " + registration.address();
    try {
      RegistrationHealth follower = healthFollower;
      if (follower != null) {
        // Every service NOT_SERVING, and later registration changes leave it so.
        follower.enterTerminalState();
      } else if (health != null) {
        health.enterTerminalState();
      }
      logger.info("Shutting down {}: health NOT_SERVING, deregistering", who);
      registration.close();
      if (!drainDelay.isZero()) {
        logger.info("Shutting down {}: waiting {} ms for clients to move away", who,
            drainDelay.toMillis());
        TimeUnit.MILLISECONDS.sleep(drainDelay.toMillis());
      }
      server.shutdown();
      if (server.awaitTermination(gracePeriod.toMillis(), TimeUnit.MILLISECONDS)) {
        logger.info("Shut down {}: every call finished", who);
        return true;
      }
      logger.warn(
          "Shutting down {}: calls still running after the {} ms grace period; cancelling them",
          who, gracePeriod.toMillis());
      server.shutdownNow();
      return false;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      logger.warn("Shutting down {}: interrupted; cancelling running calls", who);
      server.shutdownNow();
      return false;
    }
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
    private final Set<String> healthNames = new LinkedHashSet<>();
    private Duration drainDelay = Duration.ofMillis(DEFAULT_DRAIN_DELAY_MILLIS);
    private Duration gracePeriod = Duration.ofMillis(DEFAULT_GRACE_PERIOD_MILLIS);
    private boolean shutdownHook;

    private Builder(Server server, ServiceRegistration registration) {
      this.server = requireNonNull(server, "server");
      this.registration = requireNonNull(registration, "registration");
    }

    /** The health service to drive (its {@code getHealthService()} must be added to the server). */
    public Builder health(HealthStatusManager health) {
      this.health = requireNonNull(health, "health");
      return this;
    }

    /**
     * More service names whose health follows the registration (e.g. the gRPC service's full
     * name {@code helloworld.Greeter}); {@code ""} and the registration's service name always do.
     */
    public Builder healthServiceNames(String... names) {
      for (String n : names) {
        healthNames.add(requireNonNull(n, "name"));
      }
      return this;
    }

    /** Wait between deregistration and {@code server.shutdown()}; default 1 s; zero allowed. */
    public Builder drainDelay(Duration delay) {
      requireNonNull(delay, "drainDelay");
      checkArgument(!delay.isNegative(), "drainDelay: %s (expected: >= 0)", delay);
      this.drainDelay = delay;
      return this;
    }

    /** Wait for in-flight calls after {@code server.shutdown()}; default 10 s. */
    public Builder gracePeriod(Duration grace) {
      requireNonNull(grace, "gracePeriod");
      checkArgument(!grace.isNegative(), "gracePeriod: %s (expected: >= 0)", grace);
      this.gracePeriod = grace;
      return this;
    }

    /** Whether to run {@link #shutdown()} from a JVM shutdown hook (SIGTERM, SIGINT); default no. */
    public Builder shutdownHook(boolean install) {
      this.shutdownHook = install;
      return this;
    }

    public RegisteredServer build() {
      return new RegisteredServer(this);
    }
  }
}
