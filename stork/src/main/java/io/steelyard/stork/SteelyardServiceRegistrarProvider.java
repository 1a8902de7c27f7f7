package io.steelyard.stork;

import io.smallrye.stork.api.ServiceRegistrar;
import io.smallrye.stork.api.config.ServiceRegistrarAttribute;
import io.smallrye.stork.api.config.ServiceRegistrarType;
import io.smallrye.stork.spi.ServiceRegistrarProvider;
import io.smallrye.stork.spi.StorkInfrastructure;
import io.steelyard.agent.ServiceRegistration;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.Validation;
import java.time.Duration;
import java.util.Map;
import java.util.Set;

/**
 * Stork service registrar {@code steelyard}: an application registers itself in the steelyard
 * registry through steelyard's agent (a leased key, kept alive, re-registered when the lease is
 * lost, revoked on deregistration).
 *
 * <pre>{@code
 * quarkus.stork.greeter.service-registrar.type=steelyard
 * quarkus.stork.greeter.service-registrar.endpoints=http://10.0.0.1:2379
 * quarkus.stork.greeter.service-registrar.weight=5
 * quarkus.stork.greeter.service-registrar.zone=eu-west-1a
 * }</pre>
 *
 * <p>Quarkus registers only its built-in registrars by itself; an application calls {@code
 * Stork.getInstance().getService("greeter").getServiceRegistrar().registerServiceInstance(...)}
 * once it serves, and {@code deregisterServiceInstance("greeter")} when it stops
 * ({@code docs/quarkus.md}).
 */
@ServiceRegistrarType(value = SteelyardServiceRegistrarProvider.TYPE, metadataKey = SteelyardMetadataKey.class)
@ServiceRegistrarAttribute(name = "endpoints", description = "etcd endpoints, comma-separated http(s)://host:port; default $STEELYARD_ETCD_ENDPOINTS, else http://127.0.0.1:2379.")
@ServiceRegistrarAttribute(name = "prefix", description = "Key prefix of the registry.", defaultValue = KeyLayout.DEFAULT_PREFIX)
@ServiceRegistrarAttribute(name = "user", description = "etcd user and password, USER:PASSWORD.")
@ServiceRegistrarAttribute(name = "cacert", description = "CA certificate (PEM file) to trust for TLS to etcd.")
@ServiceRegistrarAttribute(name = "cert", description = "Client certificate (PEM file) for mutual TLS to etcd; needs cacert and key.")
@ServiceRegistrarAttribute(name = "key", description = "Client private key (PEM file) for mutual TLS to etcd; needs cacert and cert.")
@ServiceRegistrarAttribute(name = "weight", description = "The registered weight, 0..1000000 (0: drained).", defaultValue = "1")
@ServiceRegistrarAttribute(name = "zone", description = "The zone this instance runs in (written in the JSON value's metadata).")
@ServiceRegistrarAttribute(name = "region", description = "The region this instance runs in (written in the JSON value's metadata).")
@ServiceRegistrarAttribute(name = "ttl", description = "Lease TTL: the key outlives a crashed instance by at most this long; at least 2 s.", defaultValue = "10S")
@ServiceRegistrarAttribute(name = "enabled", description = "Whether Stork creates this registrar (Stork's own switch).", defaultValue = "true")
public final class SteelyardServiceRegistrarProvider
    implements ServiceRegistrarProvider<SteelyardRegistrarConfiguration, SteelyardMetadataKey> {

  /** The type Stork configuration names: {@value}. */
  public static final String TYPE = "steelyard";

  private static final Set<String> KNOWN = Set.of(
      "endpoints", "prefix", "user", "cacert", "cert", "key", "weight", "zone", "region", "ttl",
      "enabled");

  /** Stork instantiates providers through the generated loader. */
  public SteelyardServiceRegistrarProvider() {}

  @Override
  public ServiceRegistrar<SteelyardMetadataKey> createServiceRegistrar(
      SteelyardRegistrarConfiguration config, String serviceName, StorkInfrastructure infrastructure) {
    Attributes attrs = new Attributes(serviceName, "service-registrar '" + TYPE + "'", config.parameters());
    attrs.checkKnown(KNOWN, Map.of());
    EtcdConnection etcd = attrs.connection(
        config.getEndpoints(), config.getUser(), config.getCacert(), config.getCert(), config.getKey());
    KeyLayout layout = attrs.layout(config.getPrefix());
    int weight = attrs.integer("weight", config.getWeight(), 0, Validation.MAX_WEIGHT, Validation.DEFAULT_WEIGHT);
    String zone = attrs.locality("zone", config.getZone());
    String region = attrs.locality("region", config.getRegion());
    Duration ttl = attrs.duration("ttl", config.getTtl(), Duration.ofSeconds(ServiceRegistration.MIN_TTL_SECONDS));
    return new SteelyardServiceRegistrar(serviceName, etcd, layout, weight, zone, region, ttl);
  }
}
