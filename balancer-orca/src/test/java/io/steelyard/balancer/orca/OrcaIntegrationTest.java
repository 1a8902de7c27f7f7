package io.steelyard.balancer.orca;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.CallOptions;
import io.grpc.EquivalentAddressGroup;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.InsecureServerCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.services.MetricRecorder;
import io.grpc.stub.ClientCalls;
import io.grpc.xds.orca.OrcaMetricReportingServerInterceptor;
import io.grpc.xds.orca.OrcaServiceImpl;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.testkit.grpc.CapacityBackend;
import io.steelyard.testkit.grpc.StaticResolverProvider;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * weighted_least_request_orca through real channels to real Netty servers that report ORCA with
 * grpc-java's own server classes: per call ({@link OrcaMetricReportingServerInterceptor}) and
 * out of band ({@link OrcaServiceImpl}).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class OrcaIntegrationTest {

  private static StaticResolverProvider resolver;

  private final ScheduledExecutorService timers = Executors.newScheduledThreadPool(1);
  private final List<Server> servers = new ArrayList<>();
  private final List<MetricRecorder> recorders = new ArrayList<>();
  private final List<HealthStatusManager> health = new ArrayList<>();
  private ManagedChannel channel;

  @BeforeAll
  static void registerResolver() {
    resolver = StaticResolverProvider.register("static-orca");
  }

  @AfterAll
  static void deregisterResolver() {
    resolver.close();
  }

  @AfterEach
  void stop() throws InterruptedException {
    if (channel != null) {
      channel.shutdownNow();
      channel.awaitTermination(5, TimeUnit.SECONDS);
    }
    for (Server server : servers) {
      server.shutdownNow();
      server.awaitTermination(5, TimeUnit.SECONDS);
    }
    timers.shutdownNow();
  }

  /** Two backends "a" and "b" of equal capacity; per-call or out-of-band ORCA reporting. */
  private List<EquivalentAddressGroup> start(boolean perCall) throws Exception {
    List<EquivalentAddressGroup> endpoints = new ArrayList<>();
    for (String name : List.of("a", "b")) {
      CapacityBackend backend =
          new CapacityBackend(name, 8, Duration.ofMillis(2), timers, new Random(name.hashCode()));
      MetricRecorder recorder = MetricRecorder.newInstance();
      recorders.add(recorder);
      ServerServiceDefinition service =
          perCall
              ? ServerInterceptors.intercept(
                  backend.service(), OrcaMetricReportingServerInterceptor.create(recorder))
              : backend.service();
      HealthStatusManager manager = new HealthStatusManager();
      health.add(manager);
      var builder =
          Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create())
              .addService(service)
              .addService(manager.getHealthService());
      if (!perCall) {
        builder.addService(
            OrcaServiceImpl.createService(timers, recorder, 50, TimeUnit.MILLISECONDS));
      }
      Server server = builder.build().start();
      servers.add(server);
      endpoints.add(
          EndpointWeights.withWeight(
              new EquivalentAddressGroup(
                  new InetSocketAddress(InetAddress.getLoopbackAddress(), server.getPort())),
              1));
    }
    return endpoints;
  }

  private void connect(String name, List<EquivalentAddressGroup> endpoints, Map<String, ?> config) {
    connect(name, endpoints, config, false);
  }

  private void connect(
      String name, List<EquivalentAddressGroup> endpoints, Map<String, ?> config, boolean healthCheck) {
    Map<String, Object> serviceConfig = new HashMap<>();
    serviceConfig.put(
        "loadBalancingConfig", List.of(Map.of("weighted_least_request_orca", config)));
    if (healthCheck) {
      serviceConfig.put("healthCheckConfig", Map.of("serviceName", ""));
    }
    channel =
        Grpc.newChannelBuilder(resolver.target(name, endpoints), InsecureChannelCredentials.create())
            .defaultServiceConfig(serviceConfig)
            .build();
  }

  private Map<String, Integer> calls(int count) {
    Map<String, Integer> counts = new HashMap<>();
    for (int i = 0; i < count; i++) {
      String who =
          ClientCalls.blockingUnaryCall(
              channel,
              CapacityBackend.METHOD,
              // Generous: the first call of the JVM loads grpc-xds and Netty on a busy machine.
              CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS),
              "");
      counts.merge(who, 1, Integer::sum);
    }
    return counts;
  }

  @Test
  void perCallReportsSteerCallsToTheLessUtilizedServer() throws Exception {
    connect("per-call", start(true), Map.of());
    recorders.get(0).setApplicationUtilizationMetric(0.9); // a: penalty 10
    recorders.get(1).setApplicationUtilizationMetric(0.1); // b: penalty 1.1

    calls(20); // each server answers at least once (an unreported server scores 1) and reports

    assertThat(calls(100)).containsOnlyKeys("b");
  }

  @Test
  void cpuUtilizationCountsWhenNoApplicationUtilizationIsReported() throws Exception {
    connect("per-call-cpu", start(true), Map.of());
    recorders.get(0).setCpuUtilizationMetric(0.1);
    recorders.get(1).setCpuUtilizationMetric(0.9);

    calls(20);

    assertThat(calls(100)).containsOnlyKeys("a");
  }

  @Test
  void outOfBandReportsSteerCallsWhenEnabled() throws Exception {
    connect(
        "oob", start(false), Map.of("enableOobLoadReport", true, "oobReportingPeriod", "0.05s"));
    recorders.get(0).setApplicationUtilizationMetric(0.9);
    recorders.get(1).setApplicationUtilizationMetric(0.1);

    // No call carries a report here: only the OOB stream can tell the two apart.
    await().atMost(Duration.ofSeconds(10)).until(() -> calls(50).keySet().equals(java.util.Set.of("b")));

    recorders.get(0).setApplicationUtilizationMetric(0.1);
    recorders.get(1).setApplicationUtilizationMetric(0.9);
    await().atMost(Duration.ofSeconds(10)).until(() -> calls(50).keySet().equals(java.util.Set.of("a")));
  }

  @Test
  void withoutOutOfBandReportsTheServersLookAlike() throws Exception {
    connect("no-oob", start(false), Map.of());
    recorders.get(0).setApplicationUtilizationMetric(0.9);
    recorders.get(1).setApplicationUtilizationMetric(0.1);

    Map<String, Integer> counts = calls(200);

    assertThat(counts).containsKeys("a", "b");
  }

  @Test
  void notServingServerIsNotPickedAndServingAgainIsPickedAgain() throws Exception {
    connect("health", start(true), Map.of(), true);
    await().atMost(Duration.ofSeconds(10)).until(() -> calls(40).size() == 2);

    health.get(0).setStatus(HealthStatusManager.SERVICE_NAME_ALL_SERVICES, ServingStatus.NOT_SERVING);
    await().atMost(Duration.ofSeconds(5)).until(() -> !calls(20).containsKey("a"));
    assertThat(calls(100)).containsOnlyKeys("b");

    health.get(0).setStatus(HealthStatusManager.SERVICE_NAME_ALL_SERVICES, ServingStatus.SERVING);
    await().atMost(Duration.ofSeconds(5)).until(() -> calls(40).containsKey("a"));
  }
}
