package io.steelyard.spring;

import io.grpc.protobuf.services.HealthStatusManager;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import java.util.function.IntSupplier;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;
import org.springframework.grpc.server.lifecycle.GrpcServerLifecycle;

/**
 * Registers the Spring gRPC server in etcd ({@link GrpcServerRegistration}) when one is
 * configured and {@code steelyard.registration.enabled} is not {@code false}. Spring gRPC's health
 * service is on then ({@link GrpcHealthDefault}); {@code spring.grpc.server.health.enabled=false}
 * with registration on fails the startup naming that property.
 */
@AutoConfiguration(
    after = SteelyardEtcdAutoConfiguration.class,
    afterName = {
      "org.springframework.boot.grpc.server.autoconfigure.GrpcServerFactoryAutoConfiguration",
      "org.springframework.boot.grpc.server.autoconfigure.health.GrpcServerHealthAutoConfiguration"
    })
@ConditionalOnClass(GrpcServerLifecycle.class)
@ConditionalOnBean(GrpcServerLifecycle.class)
@ConditionalOnBooleanProperty(name = "steelyard.registration.enabled", matchIfMissing = true)
public final class SteelyardRegistrationAutoConfiguration {

  static final String BEAN_NAME = "steelyardGrpcServerRegistration";

  /**
   * Records this bean as a dependent of every Spring gRPC server lifecycle, by name: that, with
   * the same phase, is what makes it start after them and stop before them (see {@link
   * GrpcServerRegistration}). By name and not by injection, so that gRPC services may inject
   * the registration (the server's lifecycle needs the services).
   */
  @Bean(BEAN_NAME)
  @ConditionalOnMissingBean
  GrpcServerRegistration steelyardGrpcServerRegistration(
      SteelyardProperties properties,
      EtcdConnection etcd,
      KeyLayout layout,
      Environment environment,
      ObjectProvider<HealthStatusManager> health,
      ObjectProvider<GrpcServerLifecycle> servers,
      ConfigurableListableBeanFactory beanFactory) {
    if (!environment.getProperty(GrpcHealthDefault.HEALTH_PROPERTY, Boolean.class, true)) {
      throw new InvalidSteelyardPropertyException(GrpcHealthDefault.HEALTH_PROPERTY,
          "false while steelyard registers this server (expected: true, or "
              + GrpcHealthDefault.REGISTRATION_PROPERTY + "=false): clients see a stopping server"
              + " drain through its gRPC health service");
    }
    SteelyardSettings.RegistrationSettings settings = SteelyardSettings.registration(
        properties.getRegistration(), environment.getProperty("spring.application.name"), etcd);
    for (String server : beanFactory.getBeanNamesForType(GrpcServerLifecycle.class, true, false)) {
      beanFactory.registerDependentBean(server, BEAN_NAME);
    }
    IntSupplier phase = () ->
        servers.orderedStream().mapToInt(GrpcServerLifecycle::getPhase).max().orElse(Integer.MAX_VALUE);
    return new GrpcServerRegistration(settings, etcd, layout, environment::getProperty, health, phase);
  }
}
