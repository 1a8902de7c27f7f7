package io.steelyard.spring.cloud;

import static java.util.Objects.requireNonNull;

import io.steelyard.agent.RegistrationState;
import io.steelyard.agent.ServiceRegistration;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ValueFormat;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.cloud.client.serviceregistry.ServiceRegistry;

/**
 * Spring Cloud's {@link ServiceRegistry} over steelyard's registration agent: {@link #register}
 * writes {@code PREFIX/SERVICE/HOST:PORT} under a lease kept alive in the background (etcd being
 * away delays the key, never the caller), {@link #deregister} revokes it. Statuses are weights:
 * {@code OUT_OF_SERVICE} (or {@code DOWN}) drains the instance (weight 0: it stays registered and
 * receives no new calls), {@code UP} restores the weight it had; Spring Cloud's {@code
 * /actuator/serviceregistry} endpoint sets them, and so does readiness (see {@code
 * docs/spring-cloud.md}).
 *
 * <pre>{@code
 * registry.register(SteelyardRegistration.of("orders-http", "10.0.0.7", 8080, 5, Map.of()));
 * registry.setStatus(registration, "OUT_OF_SERVICE");   // drained
 * registry.setStatus(registration, "UP");               // weight 5 again
 * }</pre>
 *
 * <p>Threading: thread-safe; the agent's work runs on its own thread. Ownership: {@link #close}
 * deregisters everything still registered.
 */
public final class SteelyardServiceRegistry implements ServiceRegistry<SteelyardRegistration> {

  /** The status of an instance that takes calls. */
  public static final String UP = "UP";

  /** The status of a drained instance (weight 0), as Eureka names it. */
  public static final String OUT_OF_SERVICE = "OUT_OF_SERVICE";

  private static final Logger logger = LoggerFactory.getLogger(SteelyardServiceRegistry.class);

  private final EtcdConnection etcd;
  private final KeyLayout layout;
  private final Duration ttl;
  @Nullable private final ValueFormat format;
  private final ConcurrentHashMap<String, Entry> entries = new ConcurrentHashMap<>();

  private static final class Entry {
    final ServiceRegistration agent;
    /** The weight {@code UP} restores; guarded by this entry. */
    int upWeight;
    boolean outOfService;
    /** Set before the agent is closed: a write cut short by that is expected. */
    volatile boolean deregistered;

    Entry(ServiceRegistration agent, int upWeight) {
      this.agent = agent;
      this.upWeight = upWeight;
    }
  }

  /**
   * A registry writing under {@code layout} in {@code etcd}, with leases of {@code ttl} and values
   * in {@code format} (null: pipe, or JSON when a registration has metadata).
   */
  public SteelyardServiceRegistry(
      EtcdConnection etcd, KeyLayout layout, Duration ttl, @Nullable ValueFormat format) {
    this.etcd = requireNonNull(etcd, "etcd");
    this.layout = requireNonNull(layout, "layout");
    this.ttl = requireNonNull(ttl, "ttl");
    this.format = format;
  }

  @Override
  public void register(SteelyardRegistration registration) {
    String key = layout.instanceKey(registration.getServiceId(), registration.getAddress());
    entries.computeIfAbsent(key, k -> {
      ServiceRegistration agent = ServiceRegistration
          .builder(etcd, registration.getServiceId(), registration.getAddress())
          .keyLayout(layout)
          .weight(registration.getWeight())
          .ttl(ttl)
          .format(formatFor(registration))
          .metadata(registration.registeredMetadata())
          .build();
      logger.info("Registering {} at {} in etcd {} (key {}, weight {}, ttl {}s)",
          registration.getServiceId(), registration.getAddress(), etcd.endpointsString(), k,
          registration.getWeight(), agent.ttlSeconds());
      agent.start().exceptionally(e -> {
        logger.warn("Registration of {} at {} refused by etcd; retrying slowly: {}",
            registration.getServiceId(), registration.getAddress(), e.getMessage());
        return null;
      });
      return new Entry(agent, registration.getWeight());
    });
  }

  private ValueFormat formatFor(SteelyardRegistration registration) {
    if (format != null) {
      return format;
    }
    return registration.registeredMetadata().isEmpty() ? ValueFormat.PIPE : ValueFormat.JSON;
  }

  @Override
  public void deregister(SteelyardRegistration registration) {
    String key = layout.instanceKey(registration.getServiceId(), registration.getAddress());
    Entry entry = entries.remove(key);
    if (entry != null) {
      logger.info("Deregistering {} at {}", registration.getServiceId(), registration.getAddress());
      entry.deregistered = true;
      entry.agent.close();
    }
  }

  /** Deregisters every registration still held. */
  @Override
  public void close() {
    for (String key : entries.keySet()) {
      Entry entry = entries.remove(key);
      if (entry != null) {
        entry.deregistered = true;
        entry.agent.close();
      }
    }
  }

  /**
   * {@code OUT_OF_SERVICE} or {@code DOWN}: weight 0, remembering the weight it replaced; {@code
   * UP}: that weight back. Returns at once; the write follows on the registration's thread.
   *
   * @throws IllegalArgumentException for another status
   * @throws IllegalStateException when {@code registration} is not registered here
   */
  @Override
  public void setStatus(SteelyardRegistration registration, String status) {
    requireNonNull(status, "status");
    Entry entry = require(registration);
    String s = status.trim().toUpperCase(Locale.ROOT);
    int weight;
    synchronized (entry) {
      switch (s) {
        case OUT_OF_SERVICE, "DOWN" -> {
          if (!entry.outOfService) {
            int current = entry.agent.weight();
            if (current > 0) {
              entry.upWeight = current;
            }
            entry.outOfService = true;
          }
          weight = 0;
        }
        case UP -> {
          entry.outOfService = false;
          weight = entry.upWeight;
        }
        default -> throw new IllegalArgumentException(
            "status: '" + status + "' (expected: UP, OUT_OF_SERVICE or DOWN)");
      }
    }
    logger.info("{} at {}: status {}, weight {}", registration.getServiceId(),
        registration.getAddress(), s, weight);
    entry.agent.setWeight(weight).exceptionally(e -> {
      if (entry.deregistered || entry.agent.state() == RegistrationState.CLOSED) {
        // Deregistered meanwhile (shutdown drains, then deregisters): nothing left to weigh.
        logger.debug("{} at {}: deregistered before weight {} was written", registration.getServiceId(),
            registration.getAddress(), weight);
        return null;
      }
      logger.warn("{} at {}: writing weight {} for status {} failed; the registration writes it"
          + " again when it can: {}", registration.getServiceId(), registration.getAddress(),
          weight, s, e.getMessage());
      return null;
    });
  }

  /**
   * {@code {"status": "UP" | "OUT_OF_SERVICE", "weight": W, "state": "REGISTERED" | ...}}, or
   * null when {@code registration} is not registered here.
   */
  @Override
  @SuppressWarnings("unchecked")
  public <T> T getStatus(SteelyardRegistration registration) {
    Entry entry = entries.get(layout.instanceKey(registration.getServiceId(), registration.getAddress()));
    if (entry == null) {
      return null;
    }
    Map<String, Object> status = new LinkedHashMap<>();
    synchronized (entry) {
      status.put("status", entry.outOfService ? OUT_OF_SERVICE : UP);
    }
    status.put("weight", entry.agent.weight());
    status.put("state", entry.agent.state().name());
    return (T) status;
  }

  /** The agent's registration of {@code registration}, while registered here. */
  public Optional<ServiceRegistration> registration(SteelyardRegistration registration) {
    Entry entry = entries.get(layout.instanceKey(registration.getServiceId(), registration.getAddress()));
    return Optional.ofNullable(entry).map(e -> e.agent);
  }

  /** Completes when {@code registration}'s key is first in etcd. */
  public CompletableFuture<Void> registered(SteelyardRegistration registration) {
    return require(registration).agent.registered();
  }

  private Entry require(SteelyardRegistration registration) {
    Entry entry = entries.get(layout.instanceKey(registration.getServiceId(), registration.getAddress()));
    if (entry == null) {
      throw new IllegalStateException(registration + " is not registered by this application");
    }
    return entry;
  }
}
