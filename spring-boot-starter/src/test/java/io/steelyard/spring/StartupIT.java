package io.steelyard.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.etcd.jetcd.Client;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.steelyard.registry.admin.InstanceStore;
import io.steelyard.agent.RegistrationState;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.ApplicationRunner;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.grpc.client.GrpcChannelFactory;
import org.springframework.grpc.server.lifecycle.GrpcServerLifecycle;

/**
 * What a new application meets at startup, against a real etcd: its runners find its own server
 * registered, a key that cannot reach etcd fails the startup with the reason, the gRPC health
 * service is on whenever the server registers, and an actuator endpoint exposed without a web
 * server is named in one line.
 */
@ExtendWith(OutputCaptureExtension.class)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class StartupIT {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  /** What the runner saw: its call through etcd:///who, or the failure. */
  static final List<String> runnerSaw = new CopyOnWriteArrayList<>();

  /** A runner that calls the application's own service through etcd, without waitForReady. */
  @Configuration(proxyBeanMethods = false)
  static class CallsItselfAtStartup {
    @Bean
    ApplicationRunner callItself(GrpcChannelFactory channels) {
      return args -> {
        try {
          runnerSaw.add(ClientCalls.blockingUnaryCall(channels.createChannel("who"), WhoService.NAME,
              io.grpc.CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS), "hi"));
        } catch (RuntimeException e) {
          runnerSaw.add(e.toString());
        }
      };
    }
  }

  private static SpringApplicationBuilder app(String prefix, String... properties) {
    return new SpringApplicationBuilder(TestApp.class)
        .web(WebApplicationType.NONE)
        .properties(
            "spring.application.name=who",
            "test.name=" + prefix,
            "spring.grpc.server.port=0",
            "spring.grpc.server.host=127.0.0.1",
            "steelyard.registration.drain-delay=0s",
            "steelyard.etcd.endpoints=" + etcd.endpoints(),
            "steelyard.etcd.prefix=/" + prefix,
            "spring.grpc.client.channels.who.address=etcd:///who")
        .properties(properties);
  }

  @Test
  void aRunnerCallingItsOwnServiceThroughEtcdFindsItRegistered() {
    runnerSaw.clear();
    try (ConfigurableApplicationContext app =
        app("runner").sources(CallsItselfAtStartup.class).run()) {
      assertThat(runnerSaw).containsExactly("runner");
      assertThat(app.getBean(GrpcServerRegistration.class).state())
          .isEqualTo(RegistrationState.REGISTERED);
    }
  }

  @Test
  void startupFailsWithTheReasonWhenEtcdDoesNotTakeTheKeyInTime(CapturedOutput output) {
    assertThatThrownBy(() -> app("down",
            "steelyard.etcd.endpoints=http://127.0.0.1:1",
            "steelyard.registration.await-on-startup=1s").run().close())
        .hasRootCauseInstanceOf(RegistrationNotReadyException.class);
    assertThat(output).contains("APPLICATION FAILED TO START")
        .containsPattern("who at 127\\.0\\.0\\.1:\\d+ is not registered: etcd http://127\\.0\\.0\\.1:1"
            + " did not take the key within 1000 ms")
        .contains("steelyard.registration.await-on-startup")
        .as("the gRPC server does not stay up").contains("Completed gRPC server shutdown");
  }

  @Test
  void awaitOnStartupZeroStartsWhileEtcdIsAway() {
    try (ConfigurableApplicationContext app = app("nowait",
        "steelyard.etcd.endpoints=http://127.0.0.1:1",
        "steelyard.registration.await-on-startup=0").run()) {
      assertThat(app.getBean(GrpcServerRegistration.class).state())
          .isNotEqualTo(RegistrationState.REGISTERED);
    }
  }

  @Test
  void theKeyIsInEtcdWhenStartupReturns() {
    try (ConfigurableApplicationContext app = app("inetcd").run();
        Client client = EtcdConnection.of(etcd.endpoints()).connect()) {
      String address = app.getBean(GrpcServerRegistration.class).address().orElseThrow();
      InstanceStore store = new InstanceStore(client, KeyLayout.of("/inetcd"), Duration.ofSeconds(5));
      assertThat(store.require("who", address).acceptedOrThrow().weight()).isEqualTo(1);
    }
  }

  /**
   * TestApp declares its service with a {@code @Bean} method, the case Spring gRPC 1.0's own
   * condition misses: without the starter's default there would be no health service here.
   */
  @Test
  void theGrpcHealthServiceServesWheneverTheServerRegisters() {
    try (ConfigurableApplicationContext app = app("health").run()) {
      assertThat(healthOf(app.getBean(GrpcServerLifecycle.class).getPort()))
          .isEqualTo(ServingStatus.SERVING);
    }
  }

  /**
   * Why the starter sets that default: Spring gRPC 1.0 alone adds no health service for a service
   * declared by a {@code @Bean} method. The day it does, this fails and the default can go.
   */
  @Test
  void withRegistrationOffSpringGrpcAloneServesNoHealthForABeanMethodsService() {
    try (ConfigurableApplicationContext app =
        app("nohealthdefault", "steelyard.registration.enabled=false").run()) {
      int port = app.getBean(GrpcServerLifecycle.class).getPort();
      assertThatThrownBy(() -> healthOf(port))
          .isInstanceOfSatisfying(StatusRuntimeException.class,
              e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNIMPLEMENTED));
    }
  }

  @Test
  void healthTurnedOffWhileRegisteringFailsNamingTheProperty(CapturedOutput output) {
    assertThatThrownBy(() -> app("nohealth", "spring.grpc.server.health.enabled=false").run().close());
    assertThat(output).contains("APPLICATION FAILED TO START")
        .contains("spring.grpc.server.health.enabled: false while steelyard registers this server"
            + " (expected: true, or steelyard.registration.enabled=false)")
        .contains("Fix the property spring.grpc.server.health.enabled");
  }

  @Test
  void anEndpointExposedWithoutAWebServerIsNamedInOneLine(CapturedOutput output) {
    try (ConfigurableApplicationContext app =
        app("noweb", "management.endpoints.web.exposure.include=health,steelyard").run()) {
      assertThat(output).containsOnlyOnce("exposes the steelyard endpoint over HTTP, but this"
          + " application runs no web server")
          .contains("add spring-boot-starter-web");
    }
  }

  @Test
  void noSuchLineWhenAWebServerServesTheEndpoint(CapturedOutput output) {
    try (ConfigurableApplicationContext app = app("web",
            "server.port=0", "management.endpoints.web.exposure.include=health,steelyard")
        .web(WebApplicationType.REACTIVE).run()) {
      assertThat(output).doesNotContain("runs no web server");
    }
  }

  private static ServingStatus healthOf(int port) {
    ManagedChannel ch = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
    try {
      return HealthGrpc.newBlockingStub(ch).withDeadlineAfter(5, TimeUnit.SECONDS)
          .check(HealthCheckRequest.getDefaultInstance()).getStatus();
    } finally {
      ch.shutdownNow();
    }
  }
}
