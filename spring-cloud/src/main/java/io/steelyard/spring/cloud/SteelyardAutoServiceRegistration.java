package io.steelyard.spring.cloud;

import static java.util.Objects.requireNonNull;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.web.server.context.WebServerInitializedEvent;
import org.springframework.cloud.client.serviceregistry.AutoServiceRegistration;
import org.springframework.context.ApplicationListener;
import org.springframework.context.SmartLifecycle;

/**
 * Registers the application's HTTP server through {@link SteelyardServiceRegistry} once it
 * listens (its real port, also with {@code server.port=0}), and deregisters it first thing at
 * shutdown, before the web server stops.
 *
 * <p><b>Stop</b>, in this order: the lease revoked (the key is gone, so clients drop this
 * instance); {@code steelyard.registration.drain-delay} (1 s) for them to notice; then the web
 * server's own (graceful) stop. Why that order holds: this lifecycle's phase is {@code
 * Integer.MAX_VALUE}, above the web server's lifecycles ({@code WebServerGracefulShutdownLifecycle}
 * and {@code WebServerStartStopLifecycle}), and Spring stops higher phases first. (Spring Cloud's
 * {@code AbstractAutoServiceRegistration} deregisters in {@code @PreDestroy}, after the web server
 * has stopped, which fails calls during a rolling restart; hence this class.)
 *
 * <p>The management server (a separate {@code management.server.port}) is not registered.
 *
 * <p>Threading: thread-safe.
 */
public final class SteelyardAutoServiceRegistration
    implements AutoServiceRegistration, SmartLifecycle, ApplicationListener<WebServerInitializedEvent> {

  private static final Logger logger = LoggerFactory.getLogger(SteelyardAutoServiceRegistration.class);

  private final SteelyardServiceRegistry registry;
  private final IntFunction<SteelyardRegistration> registrationForPort;
  private final Supplier<Optional<String>> grpcAddress;
  private final Duration drainDelay;
  private final CompletableFuture<SteelyardRegistration> registered = new CompletableFuture<>();

  @Nullable private volatile SteelyardRegistration registration;
  private volatile boolean running;

  /**
   * @param registrationForPort what to register once the HTTP server listens on a port
   * @param grpcAddress the address the gRPC starter registers under the same service name, if any:
   *     never registered a second time
   */
  SteelyardAutoServiceRegistration(
      SteelyardServiceRegistry registry,
      IntFunction<SteelyardRegistration> registrationForPort,
      Supplier<Optional<String>> grpcAddress,
      Duration drainDelay) {
    this.registry = requireNonNull(registry, "registry");
    this.registrationForPort = requireNonNull(registrationForPort, "registrationForPort");
    this.grpcAddress = requireNonNull(grpcAddress, "grpcAddress");
    this.drainDelay = requireNonNull(drainDelay, "drainDelay");
  }

  @Override
  public void onApplicationEvent(WebServerInitializedEvent event) {
    if ("management".equals(event.getApplicationContext().getServerNamespace())) {
      return;
    }
    int port = event.getWebServer().getPort();
    if (port <= 0 || registration != null) {
      return;
    }
    SteelyardRegistration r = registrationForPort.apply(port);
    if (grpcAddress.get().filter(r.getAddress()::equals).isPresent()) {
      logger.info("{} at {} is already registered by the gRPC starter; not registering it again",
          r.getServiceId(), r.getAddress());
      return;
    }
    registry.register(r);
    registration = r;
    running = true;
    registry.registered(r).whenComplete((ok, e) -> {
      if (e == null) {
        registered.complete(r);
      }
    });
  }

  @Override
  public void start() {
    running = true;
  }

  /** Deregisters (revokes the lease) and waits the drain delay; the web server stops after. */
  @Override
  public void stop() {
    if (!running) {
      return;
    }
    running = false;
    SteelyardRegistration r = registration;
    if (r == null) {
      return;
    }
    registry.deregister(r);
    if (!drainDelay.isZero()) {
      logger.info("Shutting down {} at {}: waiting {} ms for clients to move away",
          r.getServiceId(), r.getAddress(), drainDelay.toMillis());
      try {
        TimeUnit.MILLISECONDS.sleep(drainDelay.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  @Override
  public boolean isRunning() {
    return running;
  }

  /** Above the web server's lifecycles: started after them, stopped before them. */
  @Override
  public int getPhase() {
    return Integer.MAX_VALUE;
  }

  /** What is registered, once the HTTP server listens. */
  public Optional<SteelyardRegistration> registration() {
    return Optional.ofNullable(registration);
  }

  /** Completes with the registration when its key is first in etcd. */
  public CompletableFuture<SteelyardRegistration> registered() {
    return registered.copy();
  }

  /** The registry's view of the registration ({@link SteelyardServiceRegistry#getStatus}). */
  public Map<String, Object> status() {
    SteelyardRegistration r = registration;
    Map<String, Object> status = r == null ? null : registry.getStatus(r);
    return status == null ? Map.of() : status;
  }
}
