package io.steelyard.stork;

import io.smallrye.stork.api.ServiceDiscovery;
import io.smallrye.stork.api.config.ServiceConfig;
import io.smallrye.stork.api.config.ServiceDiscoveryAttribute;
import io.smallrye.stork.api.config.ServiceDiscoveryType;
import io.smallrye.stork.spi.ServiceDiscoveryProvider;
import io.smallrye.stork.spi.StorkInfrastructure;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.Localities;
import io.steelyard.registry.Validation;
import java.util.Map;
import java.util.Set;

/**
 * Stork service discovery {@code steelyard}: the instances of a service as the steelyard registry
 * holds them in etcd, live.
 *
 * <pre>{@code
 * stork.greeter.service-discovery.type=steelyard
 * stork.greeter.service-discovery.endpoints=http://10.0.0.1:2379,http://10.0.0.2:2379
 * stork.greeter.service-discovery.zone=eu-west-1a
 * }</pre>
 *
 * (in Quarkus the same keys under {@code quarkus.}). The Stork service name is the registry's
 * service name: the instances are the keys under {@code PREFIX/SERVICE/}. The view is a watch, not
 * a cache, so there is no {@code refresh-period}; a misspelt or unknown attribute, or a bad value,
 * fails Stork's initialisation with one line naming the service and the attribute.
 */
@ServiceDiscoveryType(SteelyardServiceDiscoveryProvider.TYPE)
@ServiceDiscoveryAttribute(name = "endpoints", description = "etcd endpoints, comma-separated http(s)://host:port; default $STEELYARD_ETCD_ENDPOINTS, else http://127.0.0.1:2379.")
@ServiceDiscoveryAttribute(name = "prefix", description = "Key prefix of the registry.", defaultValue = KeyLayout.DEFAULT_PREFIX)
@ServiceDiscoveryAttribute(name = "zone", description = "The caller's own zone, for zone-aware routing by steelyard-weighted; default $STEELYARD_ZONE, else none (zone-blind).")
@ServiceDiscoveryAttribute(name = "user", description = "etcd user and password, USER:PASSWORD.")
@ServiceDiscoveryAttribute(name = "cacert", description = "CA certificate (PEM file) to trust for TLS to etcd.")
@ServiceDiscoveryAttribute(name = "cert", description = "Client certificate (PEM file) for mutual TLS to etcd; needs cacert and key.")
@ServiceDiscoveryAttribute(name = "key", description = "Client private key (PEM file) for mutual TLS to etcd; needs cacert and cert.")
@ServiceDiscoveryAttribute(name = "secure", description = "Whether calls to the instances use TLS (https for the REST client).", defaultValue = "false")
public final class SteelyardServiceDiscoveryProvider
    implements ServiceDiscoveryProvider<SteelyardConfiguration> {

  /** The type Stork configuration names: {@value}. */
  public static final String TYPE = "steelyard";

  private static final Set<String> KNOWN = Set.of(
      "endpoints", "prefix", "zone", "user", "cacert", "cert", "key", "secure");

  private static final Map<String, String> HINTS = Map.of(
      "refresh-period", "the view is a live etcd watch, never refreshed on a timer",
      "application", "the Stork service name is the registry's service name");

  /** Stork instantiates providers through the generated loader. */
  public SteelyardServiceDiscoveryProvider() {}

  @Override
  public ServiceDiscovery createServiceDiscovery(
      SteelyardConfiguration config, String serviceName, ServiceConfig serviceConfig,
      StorkInfrastructure infrastructure) {
    Attributes attrs = new Attributes(serviceName, "service-discovery '" + TYPE + "'", config.parameters());
    attrs.checkKnown(KNOWN, HINTS);
    if (!Validation.isValidServiceName(serviceName)) {
      throw attrs.bad("the Stork service name is the registry's service name: "
          + Validation.quote(serviceName) + " is not one (expected: 1..253 characters of"
          + " [A-Za-z0-9._-], starting with a letter or digit)", null);
    }
    EtcdConnection etcd = attrs.connection(
        config.getEndpoints(), config.getUser(), config.getCacert(), config.getCert(), config.getKey());
    KeyLayout layout = attrs.layout(config.getPrefix());
    String zone = attrs.locality("zone", Attributes.blank(config.getZone())
        ? System.getenv(Localities.ZONE_ENV) : config.getZone());
    boolean secure = attrs.bool("secure", config.getSecure(), false);
    return new SteelyardServiceDiscovery(serviceName, etcd, layout, zone, secure, System::nanoTime);
  }
}
