package io.steelyard.spring;

import java.util.Map;
import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.core.Ordered;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

/**
 * Turns Spring gRPC's health service on ({@value #HEALTH_PROPERTY}{@code =true}) when this
 * application registers its server, unless the application set that property itself. Spring gRPC
 * 1.0 otherwise adds the {@code grpc.health.v1} service only when a {@code BindableService} bean
 * is already defined while its auto-configuration is parsed: a component-scanned {@code @Service}
 * is, a {@code @Bean} method's is not yet ("No BindableService found and health not explicitly
 * enabled"); and the drain before stop relies on clients seeing NOT_SERVING. An explicit {@code
 * false} is refused when the beans are made ({@link SteelyardRegistrationAutoConfiguration}).
 * Listed in {@code META-INF/spring.factories}; runs after the configuration files are read.
 */
final class GrpcHealthDefault implements EnvironmentPostProcessor, Ordered {

  static final String HEALTH_PROPERTY = "spring.grpc.server.health.enabled";
  static final String REGISTRATION_PROPERTY = SteelyardProperties.PREFIX + ".registration.enabled";

  @Override
  public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
    if (!environment.getProperty(REGISTRATION_PROPERTY, Boolean.class, true)
        || environment.containsProperty(HEALTH_PROPERTY)) {
      return;
    }
    environment.getPropertySources().addLast(
        new MapPropertySource("steelyardGrpcHealth", Map.of(HEALTH_PROPERTY, "true")));
  }

  @Override
  public int getOrder() {
    return Ordered.LOWEST_PRECEDENCE;
  }
}
