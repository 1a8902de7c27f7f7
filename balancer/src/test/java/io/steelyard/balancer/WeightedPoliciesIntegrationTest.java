package io.steelyard.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

import io.grpc.CallOptions;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.LoadBalancerRegistry;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.stub.ClientCalls;
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
 * The policies through real channels to three real Netty servers on loopback. The 1:2:5
 * distribution test leaves out weighted_least_request: with one call at a time nothing is ever
 * outstanding, and it sends each call to the largest of its candidates by design.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class WeightedPoliciesIntegrationTest {

  @RegisterExtension static final LoopbackFixture fixture = new LoopbackFixture("static-weighted");

  private static Map<String, Object> serviceConfig(String policy, boolean healthCheck) {
    Map<String, Object> config = new HashMap<>();
    config.put("loadBalancingConfig", List.of(Map.of(policy, Map.of())));
    if (healthCheck) {
      config.put("healthCheckConfig", Map.of("serviceName", ""));
    }
    return config;
  }

  private String call() {
    return ClientCalls.blockingUnaryCall(
        fixture.channel, LoopbackCluster.WHO, CallOptions.DEFAULT.withDeadlineAfter(20, TimeUnit.SECONDS), "");
  }

  private Map<String, Integer> calls(int count) {
    Map<String, Integer> counts = new HashMap<>();
    for (int i = 0; i < count; i++) {
      counts.merge(call(), 1, Integer::sum);
    }
    return counts;
  }

  @Test
  void everyPolicyIsRegisteredUnderItsOwnName() {
    LoadBalancerRegistry registry = LoadBalancerRegistry.getDefaultRegistry();

    assertThat(registry.getProvider("weighted_random"))
        .isInstanceOf(WeightedRandomLoadBalancerProvider.class);
    assertThat(registry.getProvider("weighted_round_robin_static"))
        .isInstanceOf(WeightedRoundRobinStaticLoadBalancerProvider.class);
    assertThat(registry.getProvider("weighted_least_request"))
        .isInstanceOf(WeightedLeastRequestLoadBalancerProvider.class);
  }

  @ParameterizedTest
  @ValueSource(strings = {"weighted_random", "weighted_round_robin_static"})
  void eightThousandCallsFollowWeightsOneTwoFive(String policy) {
    String target = fixture.resolver.target("dist-" + policy, fixture.cluster.endpoints(1, 2, 5));
    fixture.channel =
        Grpc.newChannelBuilder(target, InsecureChannelCredentials.create())
            .defaultServiceConfig(serviceConfig(policy, false))
            .build();
    call(); // first call waits for the connections; not counted

    Map<String, Integer> counts = calls(8000);

    assertThat(100.0 * counts.getOrDefault("a", 0) / 8000).isCloseTo(100.0 / 8, within(2.5));
    assertThat(100.0 * counts.getOrDefault("b", 0) / 8000).isCloseTo(200.0 / 8, within(2.5));
    assertThat(100.0 * counts.getOrDefault("c", 0) / 8000).isCloseTo(500.0 / 8, within(2.5));
  }

  @ParameterizedTest
  @ValueSource(strings = {"weighted_random", "weighted_round_robin_static", "weighted_least_request"})
  void unknownOptionInTheServiceConfigIsIgnoredAndTheKnownOnesApply(String policy) {
    String target = fixture.resolver.target("unknown-" + policy, fixture.cluster.endpoints(1, 1, 1));
    Map<String, Object> config =
        Map.of(
            "loadBalancingConfig",
            List.of(Map.of(policy, Map.of("fromANewerVersion", Map.of(), "subsetSize", 1.0))));
    fixture.channel =
        Grpc.newChannelBuilder(target, InsecureChannelCredentials.create())
            .defaultServiceConfig(config)
            .build();
    call();

    Map<String, Integer> counts = calls(30);

    assertThat(counts).as("subsetSize 1 keeps one endpoint").hasSize(1).containsValue(30);
  }

  @ParameterizedTest
  @ValueSource(strings = {"weighted_random", "weighted_round_robin_static", "weighted_least_request"})
  void badValueOfAKnownOptionIsRefusedWhenTheChannelIsBuilt(String policy) {
    Map<String, Object> config =
        Map.of(
            "loadBalancingConfig",
            List.of(Map.of(policy, Map.of("panicThresholdPercent", 150.0))));

    assertThatThrownBy(
            () ->
                Grpc.newChannelBuilder("dns:///localhost", InsecureChannelCredentials.create())
                    .defaultServiceConfig(config)
                    .build())
        .hasMessageContaining(
            policy + ".panicThresholdPercent: 150.0 (expected: a whole number 0..100)");
  }

  @ParameterizedTest
  @ValueSource(strings = {"weighted_random", "weighted_round_robin_static", "weighted_least_request"})
  void defaultLoadBalancingPolicySelectsThePolicy(String policy) {
    String target = fixture.resolver.target("default-" + policy, fixture.cluster.endpoints(0, 1, 1));
    fixture.channel =
        Grpc.newChannelBuilder(target, InsecureChannelCredentials.create())
            .defaultLoadBalancingPolicy(policy)
            .build();
    call();

    Map<String, Integer> counts = calls(400);

    // The drained endpoint a never answers; only a weighted policy knows weight 0.
    assertThat(counts).containsOnlyKeys("b", "c");
  }

  @ParameterizedTest
  @ValueSource(strings = {"weighted_random", "weighted_round_robin_static", "weighted_least_request"})
  void notServingServerStopsReceivingCallsWithinOneSecond(String policy) {
    String target = fixture.resolver.target("health-" + policy, fixture.cluster.endpoints(1, 1, 1));
    fixture.channel =
        Grpc.newChannelBuilder(target, InsecureChannelCredentials.create())
            .defaultServiceConfig(serviceConfig(policy, true))
            .build();
    await().atMost(Duration.ofSeconds(5)).until(() -> calls(60).size() == 3);

    fixture.cluster.setServing(1, ServingStatus.NOT_SERVING);

    await()
        .atMost(Duration.ofSeconds(1))
        .pollInterval(Duration.ofMillis(10))
        .until(() -> !calls(30).containsKey("b"));
    assertThat(calls(600)).containsOnlyKeys("a", "c");
  }

  @ParameterizedTest
  @ValueSource(strings = {"weighted_random", "weighted_round_robin_static", "weighted_least_request"})
  void serverBackToServingIsPickedAgain(String policy) {
    String target = fixture.resolver.target("heal-" + policy, fixture.cluster.endpoints(1, 1, 1));
    fixture.channel =
        Grpc.newChannelBuilder(target, InsecureChannelCredentials.create())
            .defaultServiceConfig(serviceConfig(policy, true))
            .build();
    fixture.cluster.setServing(1, ServingStatus.NOT_SERVING);
    await().atMost(Duration.ofSeconds(5)).until(() -> calls(60).keySet().equals(java.util.Set.of("a", "c")));

    fixture.cluster.setServing(1, ServingStatus.SERVING);

    await().atMost(Duration.ofSeconds(5)).until(() -> calls(60).containsKey("b"));
  }
}
