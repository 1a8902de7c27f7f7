package io.steelyard.spring.actuate;

import io.steelyard.spring.GrpcServerRegistration;
import io.steelyard.spring.SteelyardRegistrationAutoConfiguration;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The {@code steelyard} health contributor (with {@code spring-boot-health}, e.g. through the
 * actuator starter; off with {@code management.health.steelyard.enabled=false}) and the {@code
 * /actuator/steelyard} endpoint (with the actuator, when the application registers and the
 * endpoint is exposed), with one logged line when it is exposed over HTTP in an application that
 * runs no web server.
 */
@AutoConfiguration(after = SteelyardRegistrationAutoConfiguration.class)
public final class SteelyardActuatorAutoConfiguration {

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(HealthIndicator.class)
  @ConditionalOnEnabledHealthIndicator("steelyard")
  static class HealthConfiguration {
    @Bean
    @ConditionalOnMissingBean(name = "steelyardHealthIndicator")
    SteelyardHealthIndicator steelyardHealthIndicator(ObjectProvider<GrpcServerRegistration> registration) {
      return new SteelyardHealthIndicator(registration.getIfAvailable());
    }
  }

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.actuate.endpoint.annotation.Endpoint")
  @ConditionalOnBean(GrpcServerRegistration.class)
  static class EndpointConfiguration {
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnAvailableEndpoint
    SteelyardEndpoint steelyardEndpoint(GrpcServerRegistration registration) {
      return new SteelyardEndpoint(registration);
    }

    @Bean
    static NoWebServerNotice steelyardNoWebServerNotice() {
      return new NoWebServerNotice();
    }
  }
}
