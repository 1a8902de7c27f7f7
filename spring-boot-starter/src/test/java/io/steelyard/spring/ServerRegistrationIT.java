package io.steelyard.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.jayway.jsonpath.JsonPath;
import io.etcd.jetcd.Client;
import io.grpc.BindableService;
import io.grpc.ManagedChannel;
import io.grpc.ServerServiceDefinition;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.NettyChannelBuilder;
import io.micrometer.core.instrument.MeterRegistry;
import io.steelyard.agent.AgentMetrics;
import io.steelyard.agent.RecoveryCause;
import io.steelyard.agent.RegistrationState;
import io.steelyard.agent.ServiceRegistration;
import io.steelyard.discovery.DiscoveryMetrics;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ValueFormat;
import io.steelyard.registry.admin.InstanceStore;
import io.steelyard.registry.admin.RegisteredInstance;
import io.steelyard.spring.actuate.SteelyardMeterBinder;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;
import org.springframework.grpc.server.lifecycle.GrpcServerLifecycle;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * One application with a Spring gRPC server on a random port and the actuator on another: what
 * it registers in a real etcd, and what its health, endpoint and meters say.
 */
@SpringBootTest(
    classes = TestApp.class,
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
      "spring.application.name=who",
      "test.name=alpha",
      "spring.grpc.server.port=0",
      "spring.grpc.server.host=127.0.0.1",
      "spring.grpc.server.health.enabled=true",
      "steelyard.etcd.prefix=/it-server",
      "steelyard.registration.weight=5",
      "steelyard.registration.ttl=4s",
      "steelyard.registration.zone=eu-1",
      "steelyard.registration.drain-delay=0s",
      // the host variable read through Spring's environment: here a property, not the process's
      "steelyard.registration.host-variable=TEST_ADVERTISE_HOST",
      "TEST_ADVERTISE_HOST=localhost",
      "management.endpoints.web.exposure.include=health,steelyard",
      "management.endpoint.health.show-details=always"
    })
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ServerRegistrationIT {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  private static Client client;
  private static InstanceStore store;

  @DynamicPropertySource
  static void etcdEndpoints(DynamicPropertyRegistry registry) {
    registry.add("steelyard.etcd.endpoints", etcd::endpoints);
  }

  @BeforeAll
  static void connect() {
    client = EtcdConnection.of(etcd.endpoints()).connect();
    store = new InstanceStore(client, KeyLayout.of("/it-server"), Duration.ofSeconds(5));
  }

  @AfterAll
  static void disconnect() {
    client.close();
  }

  /** A gRPC service that injects the registration: no bean cycle through the server's lifecycle. */
  @TestConfiguration(proxyBeanMethods = false)
  static class ServiceInjectingTheRegistration {
    @Bean
    BindableService registrationAware(GrpcServerRegistration registration) {
      return () -> ServerServiceDefinition.builder("steelyard.test." + registration.service()).build();
    }
  }

  @Autowired GrpcServerRegistration registration;
  @Autowired Environment environment;
  @Autowired MeterRegistry meters;
  @Autowired GrpcServerLifecycle server;

  private int httpPort;

  @BeforeEach
  void registered() throws Exception {
    registration.registered().get(20, TimeUnit.SECONDS);
    httpPort = environment.getRequiredProperty("local.server.port", Integer.class);
  }

  private ServiceRegistration agent() {
    return registration.registration().orElseThrow();
  }

  private RegisteredInstance inEtcd() {
    return store.require("who", agent().address());
  }

  @Test
  void theKeyAppearsAtTheHostFromAPropertySourceWithTheConfiguredWeightMetadataAndTheRegistrationsLease() {
    int grpcPort = server.getPort();
    assertThat(agent().address()).isEqualTo("localhost:" + grpcPort);
    RegisteredInstance i = inEtcd();
    assertThat(i.key()).isEqualTo("/it-server/who/localhost:" + grpcPort);
    assertThat(i.leaseId()).isNotZero().isEqualTo(agent().leaseId());
    DecodedValue.Accepted v = i.acceptedOrThrow();
    assertThat(v.weight()).isEqualTo(5);
    assertThat(v.metadata()).isEqualTo(Map.of("zone", "eu-1"));
    assertThat(v.format()).isEqualTo(ValueFormat.JSON);
    assertThat(agent().ttlSeconds()).isEqualTo(4);
  }

  @Test
  void healthIsUpWithTheRegistrationAndTheGrpcHealthServiceServes() {
    Http.Response r = Http.get(httpPort, "/actuator/health/steelyard");
    assertThat(r.status()).isEqualTo(200);
    assertThat((String) JsonPath.read(r.body(), "$.status")).isEqualTo("UP");
    assertThat((String) JsonPath.read(r.body(), "$.details.registration.state")).isEqualTo("REGISTERED");
    assertThat((String) JsonPath.read(r.body(), "$.details.registration.address")).isEqualTo(agent().address());

    ManagedChannel ch = NettyChannelBuilder.forTarget(agent().address()).usePlaintext().build();
    try {
      HealthGrpc.HealthBlockingStub health = HealthGrpc.newBlockingStub(ch).withDeadlineAfter(5, TimeUnit.SECONDS);
      assertThat(health.check(HealthCheckRequest.newBuilder().setService("who").build()).getStatus())
          .isEqualTo(ServingStatus.SERVING);
      assertThat(WhoService.call(ch)).isEqualTo("alpha");
    } finally {
      ch.shutdownNow();
    }
  }

  @Test
  void theEndpointReadsTheRegistration() {
    Http.Response r = Http.get(httpPort, "/actuator/steelyard");
    assertThat(r.status()).isEqualTo(200);
    assertThat((String) JsonPath.read(r.body(), "$.service")).isEqualTo("who");
    assertThat((String) JsonPath.read(r.body(), "$.state")).isEqualTo("REGISTERED");
    assertThat((String) JsonPath.read(r.body(), "$.etcd.format")).isEqualTo("json");
    assertThat((String) JsonPath.read(r.body(), "$.etcd.metadata.zone")).isEqualTo("eu-1");
    assertThat(((Number) JsonPath.read(r.body(), "$.etcd.leaseId")).longValue()).isEqualTo(agent().leaseId());
  }

  @Test
  void aWeightSetThroughTheEndpointReachesEtcdOnTheSameLeaseInTheSameFormat() {
    long lease = agent().leaseId();
    try {
      Http.Response r = Http.postJson(httpPort, "/actuator/steelyard", "{\"weight\": 8}");
      assertThat(r.status()).as(r.body()).isEqualTo(200);
      assertThat((Integer) JsonPath.read(r.body(), "$.weight")).isEqualTo(8);
      assertThat((String) JsonPath.read(r.body(), "$.message"))
          .isEqualTo(agent().address() + " weight 5 -> 8");
      RegisteredInstance i = inEtcd();
      assertThat(i.acceptedOrThrow().weight()).isEqualTo(8);
      assertThat(i.acceptedOrThrow().format()).isEqualTo(ValueFormat.JSON);
      assertThat(i.acceptedOrThrow().metadata()).isEqualTo(Map.of("zone", "eu-1"));
      assertThat(i.leaseId()).isEqualTo(lease);
      assertThat(agent().weight()).isEqualTo(8);
    } finally {
      registration.setWeight(5);
    }
  }

  @Test
  void drainAndUndrainGoThroughEtcdAndTheRegistrationFollows() {
    try {
      Http.Response drained = Http.postJson(httpPort, "/actuator/steelyard/drain", "{}");
      assertThat(drained.status()).as(drained.body()).isEqualTo(200);
      assertThat((String) JsonPath.read(drained.body(), "$.message"))
          .as("the CLI's line for the same write")
          .isEqualTo(agent().address() + " drained: weight 5 -> 0 (undrain restores 5)");
      assertThat(inEtcd().acceptedOrThrow().weight()).isZero();
      assertThat(inEtcd().drainedFromWeight()).isEqualTo(5);
      // The registration learns the operator's weight through its key watch, so a recovery after
      // a lost lease would write 0, not 5.
      await().atMost(Duration.ofSeconds(10)).until(() -> agent().weight() == 0);
      assertThat((String) JsonPath.read(Http.get(httpPort, "/actuator/health/steelyard").body(), "$.status"))
          .as("a drained instance is still registered").isEqualTo("UP");

      Http.Response undrained = Http.postJson(httpPort, "/actuator/steelyard/undrain", "{}");
      assertThat(undrained.status()).as(undrained.body()).isEqualTo(200);
      assertThat(inEtcd().acceptedOrThrow().weight()).isEqualTo(5);
      await().atMost(Duration.ofSeconds(10)).until(() -> agent().weight() == 5);
    } finally {
      registration.setWeight(5);
    }
  }

  @Test
  void badInputToTheEndpointIsABadRequestAndChangesNothing() {
    Http.Response tooHeavy = Http.postJson(httpPort, "/actuator/steelyard", "{\"weight\": 1000001}");
    assertThat(tooHeavy.status()).isEqualTo(400);
    assertThat(tooHeavy.body()).contains("weight: 1000001 (expected: 0..1000000)");
    Http.Response unknown = Http.postJson(httpPort, "/actuator/steelyard/explode", "{}");
    assertThat(unknown.status()).isEqualTo(400);
    assertThat(unknown.body()).contains("expected: drain or undrain");
    assertThat(inEtcd().acceptedOrThrow().weight()).isEqualTo(5);
  }

  @Test
  void registrationAndDiscoveryMetersAreBound() {
    String address = agent().address();
    assertThat(meters.get(AgentMetrics.WEIGHT).tags("service", "who", "address", address)
        .gauge().value()).isEqualTo(5.0);
    assertThat(meters.get(AgentMetrics.REGISTERED).tags("service", "who", "address", address)
        .gauge().value()).isEqualTo(1.0);
    assertThat(meters.get(AgentMetrics.RECOVERIES).tags("service", "who", "address", address)
        .counters()).hasSize(RecoveryCause.values().length);
    assertThat(meters.find(DiscoveryMetrics.WATCHES).gauge()).isNotNull();
    assertThat(meters.find(SteelyardMeterBinder.ETCD_WATCHES).gauge()).isNotNull();
    assertThat(registration.state()).isEqualTo(RegistrationState.REGISTERED);
  }
}
