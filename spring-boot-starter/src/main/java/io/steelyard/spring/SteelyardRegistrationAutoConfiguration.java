package io.steelyard.spring;

import io.grpc.protobuf.services.HealthStatusManager;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import java.util.List;
import org.springframework.beans.factory.ObjectProvider;
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
 * configured and {@code steelyard.registration.enabled} is not {@code false}.
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

  /**
   * Takes the server lifecycles as a list so that Spring records this bean as their dependent:
   * that, with the same phase, is what makes it stop before them (see {@link
   * GrpcServerRegistration}).
   */
  @Bean
  @ConditionalOnMissingBean
  GrpcServerRegistration steelyardGrpcServerRegistration(
      SteelyardProperties properties,
      EtcdConnection etcd,
      KeyLayout layout,
      Environment environment,
      ObjectProvider<HealthStatusManager> health,
      List<GrpcServerLifecycle> servers) {
    SteelyardSettings.RegistrationSettings settings = SteelyardSettings.registration(
        properties.getRegistration(), environment.getProperty("spring.application.name"), etcd);
    int phase = servers.stream().mapToInt(GrpcServerLifecycle::getPhase).max().orElse(Integer.MAX_VALUE);
    return new GrpcServerRegistration(settings, etcd, layout, health.getIfAvailable(), phase);
  }
}
