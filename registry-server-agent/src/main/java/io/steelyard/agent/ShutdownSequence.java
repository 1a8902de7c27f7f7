package io.steelyard.agent;

import static com.google.common.base.Preconditions.checkArgument;
import static java.util.Objects.requireNonNull;

import io.grpc.Server;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The order a registered gRPC server stops in, so that its clients move away without a failed
 * call; the one implementation behind {@link RegisteredServer#shutdown()} and the Spring Boot
 * starter's registration.
 *
 * <ol>
 *   <li>health NOT_SERVING: clients with client-side health checking stop picking this server;
 *   <li>deregister ({@link ServiceRegistration#close()}): the key disappears, so discovery clients
 *       drop this server;
 *   <li>wait the drain delay (default {@value #DEFAULT_DRAIN_DELAY_MILLIS} ms) for them to notice;
 *   <li>{@link Server#shutdown()}: GOAWAY, no new calls, calls in flight finish;
 *   <li>await termination for up to the grace period (default {@value
 *       #DEFAULT_GRACE_PERIOD_MILLIS} ms);
 *   <li>{@link Server#shutdownNow()} for whatever is still running.
 * </ol>
 *
 * <pre>{@code
 * ShutdownSequence.of(registration, Duration.ofSeconds(1))
 *     .run(server, healthFollower, Duration.ofSeconds(10));   // all six steps
 * }</pre>
 *
 * <p>{@link #run} does all six. A framework that stops the server itself calls {@link
 * #deregisterAndDrain} (steps 1 to 3) just before: the Spring Boot starter does, because Spring
 * gRPC's server lifecycle carries out steps 4 to 6 with {@code
 * spring.grpc.server.shutdown-grace-period} and publishes its shutdown events around them.
 *
 * <p>Blocking: the methods return once their steps are done. An interrupt skips the waits, cancels
 * the calls still running and keeps the thread's interrupt flag. Immutable; each method may be
 * called from any thread, once per shutdown.
 */
public final class ShutdownSequence {

  /** Default wait between deregistration and {@code server.shutdown()}, in milliseconds: {@value}. */
  public static final long DEFAULT_DRAIN_DELAY_MILLIS = 1_000;
  /** Default wait for in-flight calls after {@code server.shutdown()}, in milliseconds: {@value}. */
  public static final long DEFAULT_GRACE_PERIOD_MILLIS = 10_000;

  private static final Logger logger = LoggerFactory.getLogger(ShutdownSequence.class);

  private final ServiceRegistration registration;
  private final Duration drainDelay;
  private final String who;

  private ShutdownSequence(ServiceRegistration registration, Duration drainDelay) {
    this.registration = registration;
    this.drainDelay = drainDelay;
    this.who = registration.service() + " at " + registration.address();
  }

  /** The sequence for {@code registration}, waiting {@code drainDelay} (zero allowed) after deregistering. */
  public static ShutdownSequence of(ServiceRegistration registration, Duration drainDelay) {
    requireNonNull(registration, "registration");
    checkNonNegative(drainDelay, "drainDelay");
    return new ShutdownSequence(registration, drainDelay);
  }

  /**
   * All six steps: {@link #deregisterAndDrain}, then {@link #stopServer}.
   *
   * @return whether every call in flight finished within {@code gracePeriod}
   */
  public boolean run(Server server, @Nullable RegistrationHealth health, Duration gracePeriod) {
    requireNonNull(server, "server");
    checkNonNegative(gracePeriod, "gracePeriod");
    if (!deregisterAndDrain(health)) {
      logger.warn("Shutting down {}: interrupted; cancelling running calls", who);
      server.shutdownNow();
      return false;
    }
    return stopServer(server, gracePeriod);
  }

  /**
   * Steps 1 to 3: {@code health} (nullable) NOT_SERVING for good, the registration closed, the
   * drain delay waited.
   *
   * @return {@code false} if interrupted during the drain delay (the flag is set again)
   */
  public boolean deregisterAndDrain(@Nullable RegistrationHealth health) {
    if (health != null) {
      // Every service NOT_SERVING, and later registration changes leave it so.
      health.enterTerminalState();
    }
    logger.info("Shutting down {}: health NOT_SERVING, deregistering", who);
    registration.close();
    if (drainDelay.isZero()) {
      return true;
    }
    logger.info("Shutting down {}: waiting {} ms for clients to move away", who, drainDelay.toMillis());
    try {
      TimeUnit.MILLISECONDS.sleep(drainDelay.toMillis());
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /**
   * Steps 4 to 6: {@code server.shutdown()}, up to {@code gracePeriod} for the calls in flight,
   * then {@code server.shutdownNow()} for the rest.
   *
   * @return whether every call in flight finished within {@code gracePeriod}
   */
  public boolean stopServer(Server server, Duration gracePeriod) {
    requireNonNull(server, "server");
    checkNonNegative(gracePeriod, "gracePeriod");
    server.shutdown();
    try {
      if (server.awaitTermination(gracePeriod.toMillis(), TimeUnit.MILLISECONDS)) {
        logger.info("Shut down {}: every call finished", who);
        return true;
      }
      logger.warn(
          "Shutting down {}: calls still running after the {} ms grace period; cancelling them",
          who, gracePeriod.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      logger.warn("Shutting down {}: interrupted; cancelling running calls", who);
    }
    server.shutdownNow();
    return false;
  }

  private static void checkNonNegative(Duration d, String name) {
    requireNonNull(d, name);
    checkArgument(!d.isNegative(), "%s: %s (expected: >= 0)", name, d);
  }
}
