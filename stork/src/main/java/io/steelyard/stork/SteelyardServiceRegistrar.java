package io.steelyard.stork;

import static java.util.Objects.requireNonNull;

import com.google.common.net.HostAndPort;
import io.smallrye.mutiny.Uni;
import io.smallrye.mutiny.infrastructure.Infrastructure;
import io.smallrye.stork.api.Metadata;
import io.smallrye.stork.api.ServiceRegistrar;
import io.steelyard.agent.ServiceRegistration;
import io.steelyard.agent.ServiceRegistrationBuilder;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.Localities;
import io.steelyard.registry.Validation;
import io.steelyard.registry.ValueCodec;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Stork's registration SPI over steelyard's agent: {@link #registerServiceInstance} writes {@code
 * PREFIX/SERVICE/HOST:PORT} under a lease that the agent keeps alive, re-registers when the lease
 * is lost and revokes in {@link #deregisterServiceInstance}, so the agent's guarantees hold
 * ({@code docs/agent.md}). A name the registry refuses, or a bad address or weight, is refused
 * with {@link IllegalArgumentException} before anything is written.
 *
 * <p>Threading: thread-safe; the agent's work runs on its own thread, never the caller's.
 * Ownership: one registration per service name, held until deregistered (or the JVM exits and
 * the lease expires after its TTL).
 */
final class SteelyardServiceRegistrar implements ServiceRegistrar<SteelyardMetadataKey> {

  private static final Logger logger = LoggerFactory.getLogger(SteelyardServiceRegistrar.class);

  private final String storkService;
  private final EtcdConnection etcd;
  private final KeyLayout layout;
  private final int weight;
  @Nullable private final String zone;
  @Nullable private final String region;
  @Nullable private final Duration ttl;
  private final ConcurrentHashMap<String, ServiceRegistration> registrations = new ConcurrentHashMap<>();

  SteelyardServiceRegistrar(
      String storkService, EtcdConnection etcd, KeyLayout layout, int weight,
      @Nullable String zone, @Nullable String region, @Nullable Duration ttl) {
    this.storkService = requireNonNull(storkService, "storkService");
    this.etcd = requireNonNull(etcd, "etcd");
    this.layout = requireNonNull(layout, "layout");
    this.weight = weight;
    this.zone = zone;
    this.region = region;
    this.ttl = ttl;
  }

  @Override
  public Uni<Void> registerServiceInstance(
      String serviceName, Metadata<SteelyardMetadataKey> metadata, String ipAddress, int defaultPort) {
    checkAddressNotNull(ipAddress);
    Map<String, String> meta = new HashMap<>();
    metadata.getMetadata().forEach((k, v) -> meta.put(k.getName(), String.valueOf(v)));
    return register(serviceName, ipAddress, defaultPort, meta);
  }

  /**
   * Registers with {@code options.metadata()}: {@code weight}, {@code zone} and {@code region} are
   * read as the attributes of the same names (and win over them), every other entry is written as
   * metadata; tags are not part of the registry's value and are ignored.
   */
  @Override
  public Uni<Void> registerServiceInstance(RegistrarOptions options) {
    checkRegistrarOptionsNotNull(options);
    checkAddressNotNull(options.ipAddress());
    return register(options.serviceName(), options.ipAddress(), options.defaultPort(),
        options.metadata() == null ? Map.of() : options.metadata());
  }

  private Uni<Void> register(String service, String host, int port, Map<String, String> given) {
    String where = "steelyard registrar of Stork service '" + storkService + "': ";
    Map<String, String> meta = new HashMap<>(given);
    ServiceRegistration registration;
    String address;
    try {
      Validation.checkServiceName(service);
      address = Validation.checkAddress(HostAndPort.fromParts(host, port).toString());
      String w = meta.remove(ValueCodec.WEIGHT_METADATA_KEY);
      int registeredWeight = w == null ? weight : Validation.checkWeight(parseWeight(w));
      String z = meta.remove(Localities.ZONE_KEY);
      String r = meta.remove(Localities.REGION_KEY);
      ServiceRegistrationBuilder b = ServiceRegistration.builder(etcd, service, address)
          .keyLayout(layout)
          .weight(registeredWeight)
          .metadata(meta);
      if (z != null || zone != null) {
        b.zone(z != null ? z : zone);
      }
      if (r != null || region != null) {
        b.region(r != null ? r : region);
      }
      if (ttl != null) {
        b.ttl(ttl);
      }
      registration = b.build();
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(where + e.getMessage(), e);
    }
    ServiceRegistration existing = registrations.putIfAbsent(service, registration);
    if (existing != null) {
      registration.close(); // never started: nothing was written
      if (!existing.address().equals(address)) {
        throw new IllegalStateException(where + service + " is registered at " + existing.address()
            + " (expected: deregister it before registering " + address + ")");
      }
      registration = existing;
    } else {
      logger.info("Registering {} at {} in etcd {} (key {}, ttl {} s)", service, address,
          etcd.endpointsString(), layout.instanceKey(service, address), registration.ttlSeconds());
    }
    ServiceRegistration started = registration;
    // A copy: cancelling the Uni (a caller's timeout) must not cancel the agent's own future.
    return Uni.createFrom().completionStage(() -> started.start().copy()).replaceWithVoid();
  }

  private static long parseWeight(String w) {
    try {
      return Long.parseLong(w.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("weight: " + Validation.quote(w)
          + " (expected: an integer 0.." + Validation.MAX_WEIGHT + ")", e);
    }
  }

  /**
   * Revokes the lease of {@code serviceName}'s registration: its key is gone from etcd when the
   * {@code Uni} completes (or after the agent's close timeout when etcd is away; the lease then
   * expires on its own). Nothing registered under the name: completes at once.
   */
  @Override
  public Uni<Void> deregisterServiceInstance(String serviceName) {
    ServiceRegistration registration = registrations.remove(serviceName);
    if (registration == null) {
      return Uni.createFrom().voidItem();
    }
    logger.info("Deregistering {} at {}", serviceName, registration.address());
    // close() waits for etcd (bounded): on a worker, never on the caller's event loop.
    return Uni.createFrom().item(() -> {
      registration.close();
      return (Void) null;
    }).runSubscriptionOn(Infrastructure.getDefaultWorkerPool());
  }

  /** The registration of {@code service}, or null: for tests. */
  @Nullable
  ServiceRegistration registration(String service) {
    return registrations.get(service);
  }
}
