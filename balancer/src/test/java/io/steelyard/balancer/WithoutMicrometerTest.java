package io.steelyard.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.grpc.CallOptions;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.stub.ClientCalls;
import io.steelyard.testkit.grpc.StaticResolverProvider;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Micrometer is an optional dependency: run by the build's {@code without-micrometer} execution,
 * with Micrometer off the class path, every policy still balances (health checking included).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class WithoutMicrometerTest {

  @Test
  void everyPolicyWorksWithMicrometerOffTheClassPath() throws Exception {
    // Run alone (-Dtest=...) in the default execution, Micrometer is present: nothing to prove.
    assumeTrue(Boolean.getBoolean("steelyard.withoutMicrometer"), "needs the without-micrometer run");
    assertThatThrownBy(() -> Class.forName("io.micrometer.core.instrument.MeterRegistry"))
        .isInstanceOf(ClassNotFoundException.class);
    try (StaticResolverProvider resolver = StaticResolverProvider.register("static-plain");
        LoopbackCluster cluster = new LoopbackCluster(List.of("a", "b"))) {
      for (String policy : List.of("weighted_random", "weighted_round_robin_static")) {
        ManagedChannel channel =
            Grpc.newChannelBuilder(resolver.target(policy, cluster.endpoints(0, 1)),
                    InsecureChannelCredentials.create())
                .defaultServiceConfig(Map.of(
                    "loadBalancingConfig", List.of(Map.of(policy, Map.of())),
                    "healthCheckConfig", Map.of("serviceName", "")))
                .build();
        try {
          for (int i = 0; i < 20; i++) {
            // Generous: the first call connects and health-checks, on a shared, loaded machine.
            assertThat(ClientCalls.blockingUnaryCall(channel, LoopbackCluster.WHO,
                CallOptions.DEFAULT.withWaitForReady().withDeadlineAfter(30, TimeUnit.SECONDS), ""))
                .isEqualTo("b");
          }
        } finally {
          channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
      }
    }
  }
}
