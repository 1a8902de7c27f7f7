package io.steelyard.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/**
 * A bad {@code steelyard.*} property stops the application before its gRPC server binds, with
 * Spring Boot's failure report naming the property (the analyzer is found through {@code
 * META-INF/spring.factories}). No etcd is needed: the values are refused before any call.
 */
@ExtendWith(OutputCaptureExtension.class)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class StartupFailureTest {

  private static void run(String... properties) {
    new SpringApplicationBuilder(TestApp.class)
        .web(WebApplicationType.NONE)
        .properties(
            "spring.application.name=greeter",
            "spring.grpc.server.port=0",
            "spring.grpc.server.host=127.0.0.1",
            "spring.grpc.client.enabled=false")
        .properties(properties)
        .run()
        .close();
  }

  @Test
  void aMalformedEtcdEndpoint(CapturedOutput output) {
    assertThatThrownBy(() -> run("steelyard.etcd.endpoints=http://127.0.0.1:2379,etcd-2:port"))
        .hasRootCauseInstanceOf(IllegalArgumentException.class);
    assertThat(output).contains("APPLICATION FAILED TO START")
        .contains("Invalid steelyard configuration: steelyard.etcd.endpoints: endpoints: 'etcd-2:port'"
            + " (expected: http(s)://host:port)")
        .contains("Fix the property steelyard.etcd.endpoints");
  }

  @Test
  void aWeightOutOfRange(CapturedOutput output) {
    assertThatThrownBy(() -> run("steelyard.registration.weight=2000000"));
    assertThat(output).contains("APPLICATION FAILED TO START")
        .contains("steelyard.registration.weight: weight: 2000000 (expected: 0..1000000)")
        .doesNotContain("gRPC Server started");
  }

  @Test
  void aServiceNameTheRegistryRefuses(CapturedOutput output) {
    assertThatThrownBy(() -> run("steelyard.registration.service=greeter/../payments"));
    assertThat(output).contains("APPLICATION FAILED TO START")
        .contains("steelyard.registration.service: service: 'greeter/../payments' (expected: ");
  }
}
