package io.steelyard.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.steelyard.discovery.EtcdNameResolverProvider;
import io.steelyard.spring.actuate.SteelyardHealthIndicator;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * {@code steelyard.registration.enabled=false} and {@code steelyard.discovery.enabled=false}
 * turn their part off and leave the rest. The etcd endpoint points at a closed port: a part that
 * is off never connects, so the applications start and stop without an etcd.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SwitchesTest {

  private static ConfigurableApplicationContext run(String... properties) {
    return new SpringApplicationBuilder(TestApp.class)
        .web(WebApplicationType.NONE)
        .properties(
            "spring.application.name=who",
            "spring.grpc.server.port=0",
            "spring.grpc.server.host=127.0.0.1",
            "steelyard.etcd.endpoints=http://127.0.0.1:1",
            "management.endpoints.web.exposure.include=health,steelyard")
        .properties(properties)
        .run();
  }

  @Test
  void registrationDisabledRegistersNothingAndHealthShowsNoRegistration() {
    try (ConfigurableApplicationContext app = run("steelyard.registration.enabled=false")) {
      assertThat(app.getBeanNamesForType(GrpcServerRegistration.class)).isEmpty();
      assertThat(app.getBeanNamesForType(EtcdNameResolverProvider.class)).as("discovery stays on").hasSize(1);
      Health health = app.getBean(SteelyardHealthIndicator.class).health();
      assertThat(health.getStatus()).isEqualTo(Status.UP);
      assertThat(health.getDetails()).containsOnlyKeys("discovery");
      @SuppressWarnings("unchecked")
      Map<String, Object> discovery = (Map<String, Object>) health.getDetails().get("discovery");
      assertThat(discovery).containsOnlyKeys("watches", "staleWatches", "maxStalenessMillis", "malformedValues");
    }
  }

  @Test
  void discoveryDisabledLeavesChannelsToGrpcsOwnResolvers() {
    try (ConfigurableApplicationContext app =
        run("steelyard.discovery.enabled=false", "steelyard.registration.enabled=false")) {
      assertThat(app.getBeanNamesForType(EtcdNameResolverProvider.class)).isEmpty();
    }
  }
}
