package io.steelyard.spring.cloud;

import io.steelyard.agent.ServiceRegistration;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.Validation;
import io.steelyard.spring.GrpcServerRegistration;
import io.steelyard.spring.SteelyardEtcdAutoConfiguration;
import io.steelyard.spring.SteelyardProperties;
import java.net.InetAddress;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.web.server.context.WebServerInitializedEvent;
import org.springframework.cloud.commons.util.InetUtils;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * Registers the application's HTTP server in the registry through {@link
 * SteelyardServiceRegistry}, under the gRPC starter's key layout and with its {@code
 * steelyard.registration.*} weight, TTL, metadata, format, host and drain delay, and keeps the
 * registration in step with readiness ({@link ReadinessDrain}).
 *
 * <p><b>One key per server.</b> With the gRPC starter registering the application's gRPC server
 * as {@code NAME}, the HTTP server registers as {@code NAME-http} (unless {@code
 * steelyard.cloud.registration.service} names it), so gRPC clients of {@code etcd:///NAME} never
 * get the HTTP port and HTTP clients never get the gRPC port; naming both the same fails the
 * startup. An HTTP server whose address is the one the gRPC starter registers is not registered
 * again.
 *
 * <p>Off with {@code steelyard.cloud.registration.enabled=false} or Spring Cloud's {@code
 * spring.cloud.service-registry.auto-registration.enabled=false} (the {@link
 * SteelyardServiceRegistry} stays, for registrations of the application's own).
 */
@AutoConfiguration(
    after = SteelyardEtcdAutoConfiguration.class,
    afterName = {
      "io.steelyard.spring.SteelyardRegistrationAutoConfiguration",
      "org.springframework.cloud.commons.util.UtilAutoConfiguration"
    })
@ConditionalOnBooleanProperty(name = "steelyard.cloud.registration.enabled", matchIfMissing = true)
@EnableConfigurationProperties(SteelyardCloudProperties.class)
public final class SteelyardCloudRegistrationAutoConfiguration {

  /** Appended to the gRPC service name for the HTTP server's registration. */
  static final String HTTP_SUFFIX = "-http";

  @Bean(destroyMethod = "close")
  SteelyardServiceRegistry steelyardServiceRegistry(
      EtcdConnection etcd, KeyLayout layout, SteelyardProperties steelyard) {
    SteelyardProperties.Registration r = steelyard.getRegistration();
    String probeService = "probe";
    try {
      ServiceRegistration.builder(etcd, probeService, "127.0.0.1:1").ttl(r.getTtl());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("steelyard.registration.ttl: " + e.getMessage(), e);
    }
    return new SteelyardServiceRegistry(etcd, layout, r.getTtl(), r.getFormat());
  }

  @Bean
  @ConditionalOnClass(WebServerInitializedEvent.class)
  @ConditionalOnBooleanProperty(
      name = "spring.cloud.service-registry.auto-registration.enabled", matchIfMissing = true)
  SteelyardAutoServiceRegistration steelyardAutoServiceRegistration(
      SteelyardServiceRegistry registry,
      SteelyardProperties steelyard,
      SteelyardCloudProperties cloud,
      Environment environment,
      ObjectProvider<InetUtils> inetUtils,
      ObjectProvider<GrpcServerRegistration> grpc) {
    SteelyardProperties.Registration r = steelyard.getRegistration();
    GrpcServerRegistration grpcRegistration = grpc.getIfAvailable();
    String service = httpService(cloud, r, environment.getProperty("spring.application.name"),
        grpcRegistration == null ? null : grpcRegistration.service());
    int weight = checked("steelyard.registration.weight", () -> Validation.checkWeight(r.getWeight()));
    Map<String, String> metadata = Map.copyOf(r.getMetadata());
    Duration drainDelay = r.getDrainDelay();
    if (drainDelay == null || drainDelay.isNegative()) {
      throw new IllegalArgumentException("steelyard.registration.drain-delay: " + drainDelay + " (expected: >= 0)");
    }
    String host = r.getHost() != null ? r.getHost()
        : host(environment.getProperty("server.address"), inetUtils.getIfAvailable());
    checked("steelyard.registration.host",
        () -> SteelyardRegistration.of(service, host, 1, weight, metadata));
    return new SteelyardAutoServiceRegistration(
        registry,
        port -> SteelyardRegistration.of(service, host, port, weight, metadata),
        () -> grpcRegistration != null && grpcRegistration.service().equals(service)
            ? grpcRegistration.address() : Optional.empty(),
        drainDelay);
  }

  @Bean
  @ConditionalOnClass(WebServerInitializedEvent.class)
  @ConditionalOnBooleanProperty(
      name = "spring.cloud.service-registry.auto-registration.enabled", matchIfMissing = true)
  ReadinessDrain steelyardReadinessDrain(
      SteelyardServiceRegistry registry, SteelyardAutoServiceRegistration auto) {
    return new ReadinessDrain(registry, auto);
  }

  /** The HTTP server's service name; see the class comment. */
  static String httpService(
      SteelyardCloudProperties cloud, SteelyardProperties.Registration grpcProperties,
      String applicationName, String grpcService) {
    String explicit = cloud.getRegistration().getService();
    if (explicit != null) {
      checked("steelyard.cloud.registration.service", () -> Validation.checkServiceName(explicit));
      if (explicit.equals(grpcService)) {
        throw new IllegalArgumentException("steelyard.cloud.registration.service: '" + explicit
            + "' is the name the gRPC server registers as (expected: another name, or unset for '"
            + explicit + HTTP_SUFFIX + "')");
      }
      return explicit;
    }
    String base = grpcProperties.getService() != null ? grpcProperties.getService() : applicationName;
    if (base == null || base.isBlank()) {
      throw new IllegalArgumentException("steelyard.cloud.registration.service: not set, and"
          + " spring.application.name neither (expected: the service name to register as)");
    }
    String service = base.equals(grpcService) ? base + HTTP_SUFFIX : base;
    return checked("steelyard.cloud.registration.service", () -> Validation.checkServiceName(service));
  }

  /** {@code server.address} unless it is a wildcard, else Spring Cloud's first non-loopback address. */
  static String host(String serverAddress, InetUtils inetUtils) {
    if (serverAddress != null && !serverAddress.isBlank()) {
      try {
        InetAddress bound = InetAddress.getByName(serverAddress);
        if (!bound.isAnyLocalAddress()) {
          return bound.getHostAddress();
        }
      } catch (java.net.UnknownHostException e) {
        throw new IllegalArgumentException("server.address: '" + serverAddress + "' (expected: an address of this machine)", e);
      }
    }
    if (inetUtils != null) {
      return inetUtils.findFirstNonLoopbackHostInfo().getIpAddress();
    }
    return InetAddress.getLoopbackAddress().getHostAddress();
  }

  private static <T> T checked(String property, java.util.function.Supplier<T> check) {
    try {
      return check.get();
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(property + ": " + e.getMessage(), e);
    }
  }
}
