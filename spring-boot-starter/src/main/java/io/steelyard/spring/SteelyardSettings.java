package io.steelyard.spring;

import io.steelyard.agent.AdvertisedAddress;
import io.steelyard.agent.ServiceRegistration;
import io.steelyard.agent.ServiceRegistrationBuilder;
import io.steelyard.discovery.EtcdNameResolverProvider;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.Localities;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.registry.Validation;
import io.steelyard.registry.ValueCodec;
import io.steelyard.registry.ValueFormat;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.Supplier;
import javax.annotation.Nullable;

/**
 * Turns {@link SteelyardProperties} into steelyard's own objects, checked by steelyard's own rules
 * (registry-core's {@code Validation}, the builders' setters); every refusal becomes an {@link
 * InvalidSteelyardPropertyException} naming the property.
 */
final class SteelyardSettings {

  /** Stands in for the address, unknown until the server listens, while checking the rest. */
  private static final String PLACEHOLDER_ADDRESS = "127.0.0.1:1";

  private SteelyardSettings() {}

  static EtcdConnection connection(SteelyardProperties.Etcd etcd) {
    EtcdConnection.Builder b = EtcdConnection.builder();
    check("etcd.endpoints", () -> b.endpoints(etcd.getEndpoints()));
    if (etcd.getUser() != null || etcd.getPassword() != null) {
      if (etcd.getUser() == null || etcd.getPassword() == null) {
        throw new InvalidSteelyardPropertyException(
            prop(etcd.getUser() == null ? "etcd.user" : "etcd.password"),
            "missing (expected: steelyard.etcd.user and steelyard.etcd.password together)");
      }
      check("etcd.user", () -> b.user(etcd.getUser(), etcd.getPassword()));
    }
    if (etcd.getCaCert() != null) {
      check("etcd.ca-cert", () -> b.tls(Path.of(etcd.getCaCert()), path(etcd.getCert()), path(etcd.getKey())));
    } else if (etcd.getCert() != null || etcd.getKey() != null) {
      throw new InvalidSteelyardPropertyException(
          prop(etcd.getCert() != null ? "etcd.cert" : "etcd.key"),
          "set without steelyard.etcd.ca-cert (expected: ca-cert, and cert with key for mutual TLS)");
    }
    check("etcd.connect-timeout", () -> b.connectTimeout(etcd.getConnectTimeout()));
    return b.build();
  }

  static KeyLayout layout(SteelyardProperties.Etcd etcd) {
    return check("etcd.prefix", () -> KeyLayout.of(etcd.getPrefix()));
  }

  static EtcdNameResolverProvider resolverProvider(EtcdConnection connection, KeyLayout layout,
      SteelyardProperties.Discovery discovery, Function<String, String> environment) {
    EtcdNameResolverProvider.Builder b =
        EtcdNameResolverProvider.builder().connection(connection).layout(layout).environment(environment);
    check("discovery.debounce", () -> b.debounce(discovery.getDebounce()));
    check("discovery.relist-interval", () -> b.relistInterval(discovery.getRelistInterval()));
    if (discovery.getZone() != null) {
      check("discovery.zone", () -> b.zone(discovery.getZone()));
    }
    return b.build();
  }

  /**
   * The registration settings, each checked now (before the gRPC server binds) by the rules the
   * registration applies when it is built.
   */
  static RegistrationSettings registration(
      SteelyardProperties.Registration r, @Nullable String applicationName, EtcdConnection etcd) {
    String service = r.getService() != null ? r.getService() : applicationName;
    if (service == null || service.isBlank()) {
      throw new InvalidSteelyardPropertyException(
          prop("registration.service"),
          "not set, and spring.application.name neither (expected: the service name to register as)");
    }
    String serviceProperty = r.getService() != null ? prop("registration.service") : "spring.application.name";
    try {
      Validation.checkServiceName(service);
    } catch (IllegalArgumentException e) {
      throw new InvalidSteelyardPropertyException(serviceProperty, e);
    }
    if (r.getAddress() != null) {
      check("registration.address", () -> Validation.checkAddress(r.getAddress()));
    }
    if (r.getHost() != null) {
      check("registration.host", () -> AdvertisedAddress.hostAndPort(r.getHost(), 1));
    }
    check("registration.host-variable", () -> AdvertisedAddress.fromEnvironment().withHostVariable(
        Objects.requireNonNullElse(r.getHostVariable(), "")));
    ServiceRegistrationBuilder probe = ServiceRegistration.builder(etcd, service, PLACEHOLDER_ADDRESS);
    check("registration.weight", () -> probe.weight(r.getWeight()));
    check("registration.ttl", () -> probe.ttl(r.getTtl()));
    Map<String, String> metadata = withLocality(r);
    // The registration's own format rule (ServiceRegistrationBuilder#format): JSON carries
    // metadata, PIPE is the default, PLAIN carries neither weight nor metadata.
    ValueFormat format = r.getFormat() != null ? r.getFormat()
        : metadata.isEmpty() ? ValueFormat.PIPE : ValueFormat.JSON;
    check(r.getFormat() != null ? "registration.format" : "registration.metadata",
        () -> ValueCodec.encode(
            new ServiceInstance(service, PLACEHOLDER_ADDRESS, r.getWeight(), metadata), format));
    Duration drainDelay = r.getDrainDelay();
    if (drainDelay == null || drainDelay.isNegative()) {
      throw new InvalidSteelyardPropertyException(
          prop("registration.drain-delay"), drainDelay + " (expected: >= 0)");
    }
    Duration awaitOnStartup = r.getAwaitOnStartup();
    if (awaitOnStartup == null || awaitOnStartup.isNegative()) {
      throw new InvalidSteelyardPropertyException(
          prop("registration.await-on-startup"), awaitOnStartup + " (expected: >= 0, 0 for no wait)");
    }
    return new RegistrationSettings(service, r.getAddress(), r.getHost(), r.getHostVariable(), r.getWeight(), r.getTtl(),
        format, metadata, drainDelay, awaitOnStartup);
  }

  /** What the registration is made of once the server's port is known. */
  record RegistrationSettings(
      String service,
      @Nullable String address,
      @Nullable String host,
      String hostVariable,
      int weight,
      Duration ttl,
      ValueFormat format,
      Map<String, String> metadata,
      Duration drainDelay,
      Duration awaitOnStartup) {

    ServiceRegistrationBuilder builder(EtcdConnection etcd, KeyLayout layout, String address) {
      return ServiceRegistration.builder(etcd, service, address)
          .keyLayout(layout)
          .weight(weight)
          .ttl(ttl)
          .format(format)
          .metadata(metadata);
    }
  }

  /** The metadata with {@code zone} and {@code region} added by the registration's own rule. */
  private static Map<String, String> withLocality(SteelyardProperties.Registration r) {
    Map<String, String> withZone =
        check("registration.zone", () -> Localities.withLocality(r.getMetadata(), r.getZone(), null));
    return check("registration.region", () -> Localities.withLocality(withZone, null, r.getRegion()));
  }

  @Nullable
  private static Path path(@Nullable String file) {
    return file == null ? null : Path.of(file);
  }

  private static String prop(String name) {
    return SteelyardProperties.PREFIX + "." + name;
  }

  private static <T> T check(String property, Supplier<T> check) {
    try {
      return check.get();
    } catch (IllegalArgumentException e) {
      // Also java.nio.file.InvalidPathException, for a file name the OS cannot take.
      throw new InvalidSteelyardPropertyException(prop(property), e);
    }
  }
}
