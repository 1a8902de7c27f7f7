package io.steelyard.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.grpc.CallOptions;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.stub.ClientCalls;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.steelyard.balancer.spi.EndpointState;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The balancer and call meters through real channels to real Netty servers on loopback, for
 * every policy: effective weights, readiness and why not, calls per backend.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class BalancerMetricsTest {

  @RegisterExtension static final LoopbackFixture fixture = new LoopbackFixture("static-metered");

  private final MeterRegistry meters = new SimpleMeterRegistry();
  private final BalancerMetrics metrics = BalancerMetrics.of(meters);
  private String service;

  private void channel(String name, String policy, String healthService, int... weights) {
    service = "localhost"; // the static resolver's authority: the service tag
    Map<String, Object> config = new HashMap<>();
    config.put("loadBalancingConfig", List.of(Map.of(policy, Map.of())));
    if (healthService != null) {
      config.put("healthCheckConfig", Map.of("serviceName", healthService));
    }
    fixture.channel = metrics.configure(
            Grpc.newChannelBuilder(fixture.resolver.target(name, fixture.cluster.endpoints(weights)),
                InsecureChannelCredentials.create()))
        .defaultServiceConfig(config)
        .build();
  }

  private String backend(int server) {
    return EndpointState.label(fixture.cluster.addresses.get(server));
  }

  private String call(boolean waitForReady) {
    CallOptions options = CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS);
    return ClientCalls.blockingUnaryCall(
        fixture.channel, LoopbackCluster.WHO, waitForReady ? options.withWaitForReady() : options, "");
  }

  private double weight(int server) {
    return meters.get(BalancerMetrics.WEIGHT).tags("service", service, "backend", backend(server))
        .gauge().value();
  }

  /** The reason tag of the backend's one readiness series, and its value. */
  private Map.Entry<String, Double> ready(int server) {
    List<Gauge> gauges = List.copyOf(meters.find(BalancerMetrics.READY)
        .tags("service", service, "backend", backend(server)).gauges());
    assertThat(gauges).hasSize(1);
    Gauge g = gauges.get(0);
    return Map.entry(g.getId().getTag("reason"), g.value());
  }

  private double calls(int server, Status.Code code) {
    var c = meters.find(BalancerMetrics.CALLS).tags("service", service, "backend", backend(server),
        "method", LoopbackCluster.WHO.getFullMethodName(), "status", code.name()).counter();
    return c == null ? 0 : c.count();
  }

  @ParameterizedTest
  @ValueSource(strings = {"weighted_random", "weighted_round_robin_static"})
  void weightsReadinessAndCallsPerBackend(String policy) {
    channel("weights-" + policy, policy, null, 1, 0, 5);
    call(true);
    await().atMost(Duration.ofSeconds(10)).until(() -> meters.find(BalancerMetrics.READY)
        .tag("reason", "ready").gauges().size() == 3);

    for (int i = 0; i < 200; i++) {
      call(false);
    }

    assertThat(weight(0)).isEqualTo(1);
    assertThat(weight(1)).as("drained: connected, never picked").isZero();
    assertThat(weight(2)).isEqualTo(5);
    assertThat(ready(1)).isEqualTo(Map.entry("ready", 1.0));
    assertThat(calls(1, Status.Code.OK)).isZero();
    assertThat(calls(0, Status.Code.OK) + calls(2, Status.Code.OK)).isEqualTo(201);
    assertThat(calls(2, Status.Code.OK)).isGreaterThan(calls(0, Status.Code.OK));
    assertThat(meters.get(BalancerMetrics.CALL_DURATION).tags("service", service, "backend",
        backend(2)).timer().count()).isEqualTo((long) calls(2, Status.Code.OK));
  }

  @ParameterizedTest
  @ValueSource(strings = {"weighted_random", "weighted_round_robin_static"})
  void aNotServingBackendIsNotReadyAndSaysWhy(String policy) {
    channel("health-" + policy, policy, "", 1, 1, 1);
    call(true);
    fixture.cluster.setServing(0, ServingStatus.NOT_SERVING);

    await().atMost(Duration.ofSeconds(10))
        .until(() -> ready(0).equals(Map.entry("health_not_serving", 0.0)));
    assertThat(ready(1)).isEqualTo(Map.entry("ready", 1.0));
  }

  /**
   * A server whose health service knows only the overall status (as grpc-go's standard one),
   * and a client that asks about a named service: SERVICE_UNKNOWN, and every metric, status
   * and report says so. This test also fails the day grpc-services words its status otherwise.
   */
  @Test
  void aHealthServiceAnsweringOnlyTheOverallStatusIsNamedAsTheCause() {
    for (int i = 0; i < 3; i++) {
      fixture.cluster.health.get(i).setStatus("", ServingStatus.SERVING); // the overall status only
    }
    channel("unknown-health", "weighted_random", "steelyard.examples.Greeter", 1, 1, 1);
    fixture.channel.getState(true);

    await().atMost(Duration.ofSeconds(10))
        .until(() -> meters.find(BalancerMetrics.READY).tag("reason", "health_service_unknown")
            .gauges().size() == 3);
    assertThat(metrics.backends(service)).allSatisfy(e -> assertThat(e.describe())
        .contains("TRANSIENT_FAILURE (health check: SERVICE_UNKNOWN for service"
            + " 'steelyard.examples.Greeter'"));
    assertThatThrownBy(() -> call(false))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
          assertThat(e.getStatus().getDescription()).contains("SERVICE_UNKNOWN");
        });
    assertThat(meters.get(BalancerMetrics.CALLS).tags("service", service,
        "backend", BalancerMetrics.NO_BACKEND, "status", "UNAVAILABLE").counter().count())
        .isEqualTo(1);
  }

  @Test
  void aServerThatIsGoneIsNamedAsRefusingConnections() throws InterruptedException {
    channel("refused", "weighted_random", null, 1, 1, 1);
    call(true);
    fixture.cluster.servers.get(0).shutdownNow().awaitTermination(5, TimeUnit.SECONDS);

    await().atMost(Duration.ofSeconds(10))
        .until(() -> ready(0).equals(Map.entry("connection_refused", 0.0)));
  }

  @Test
  void theMetersOfAChannelGoWithIt() throws InterruptedException {
    channel("gone", "weighted_random", null, 1, 1, 1);
    call(true);
    assertThat(meters.find(BalancerMetrics.WEIGHT).tag("service", service).gauges()).hasSize(3);
    fixture.channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    await().atMost(Duration.ofSeconds(5)).until(() ->
        meters.find(BalancerMetrics.WEIGHT).tag("service", service).gauges().isEmpty()
            && meters.find(BalancerMetrics.READY).tag("service", service).gauges().isEmpty());
  }
}
