package io.steelyard.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.CallOptions;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.stub.ClientCalls;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Slow start through a real channel to real Netty servers on loopback: a server that joins (a new
 * endpoint in a later resolution, as a new registration arrives by the etcd watch) gets a share
 * that rises over the window to its full one. Calls are sequential, so weighted_least_request
 * (which ranks an idle ramping endpoint by weight alone) is left out; the ramp itself is the same
 * code for all three and is tested under fake time in {@code SlowStartTest}.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SlowStartIntegrationTest {

  private static final long WINDOW_MILLIS = 3_000;

  private LoopbackCluster cluster;
  private UpdatableResolverProvider resolver;
  private ManagedChannel channel;

  @BeforeEach
  void startServers() throws Exception {
    cluster = new LoopbackCluster(List.of("a", "b", "c"));
  }

  @AfterEach
  void stop() throws InterruptedException {
    if (channel != null) {
      channel.shutdownNow();
      channel.awaitTermination(5, TimeUnit.SECONDS);
    }
    if (resolver != null) {
      resolver.close();
    }
    cluster.close();
  }

  private String call() {
    return ClientCalls.blockingUnaryCall(
        channel, LoopbackCluster.WHO, CallOptions.DEFAULT.withDeadlineAfter(20, TimeUnit.SECONDS), "");
  }

  @ParameterizedTest
  @ValueSource(strings = {"weighted_random", "weighted_round_robin_static"})
  void aJoiningServersShareRisesOverTheWindow(String policy) {
    List<io.grpc.EquivalentAddressGroup> all = cluster.endpoints(1, 1, 1);
    resolver = UpdatableResolverProvider.register("slowstart-" + policy.replace('_', '-'), all.subList(0, 2));
    Map<String, Object> slowStart = Map.of("window", WINDOW_MILLIS / 1000 + "s", "minWeightPercent", 10.0);
    channel =
        Grpc.newChannelBuilder(resolver.target(), InsecureChannelCredentials.create())
            .defaultServiceConfig(
                Map.of("loadBalancingConfig", List.of(Map.of(policy, Map.of("slowStart", slowStart)))))
            .build();
    Set<String> seen = new HashSet<>();
    await().atMost(Duration.ofSeconds(10)).until(() -> seen.add(call()) && seen.size() == 2);
    // The first resolution's servers did not ramp: they share equally from the start.
    assertThat(share(2_000, "a")).isBetween(0.35, 0.65);

    long joined = System.nanoTime();
    resolver.update(all);

    // Calls in three periods after c joined: c's share of each.
    double early = shareUntil(joined, 0, 800, "c"); // weight 10 % .. 27 %: about 8 % expected
    double middle = shareUntil(joined, 1_300, 2_000, "c"); // 43 % .. 67 %: about 21 %
    double late = shareUntil(joined, WINDOW_MILLIS + 500, WINDOW_MILLIS + 1_500, "c"); // 1/3

    assertThat(early).isLessThan(0.16);
    assertThat(middle).isBetween(early, late);
    assertThat(late).isBetween(0.26, 0.41);
  }

  /** {@code name}'s share of {@code count} calls. */
  private double share(int count, String name) {
    int hits = 0;
    for (int i = 0; i < count; i++) {
      hits += call().equals(name) ? 1 : 0;
    }
    return (double) hits / count;
  }

  /** {@code name}'s share of the calls made from {@code fromMillis} to {@code toMillis} after {@code start}. */
  private double shareUntil(long start, long fromMillis, long toMillis, String name) {
    while (System.nanoTime() - start < TimeUnit.MILLISECONDS.toNanos(fromMillis)) {
      call();
    }
    int hits = 0;
    int calls = 0;
    while (System.nanoTime() - start < TimeUnit.MILLISECONDS.toNanos(toMillis)) {
      hits += call().equals(name) ? 1 : 0;
      calls++;
    }
    assertThat(calls).as("calls from %s to %s ms", fromMillis, toMillis).isGreaterThan(50);
    return (double) hits / calls;
  }
}
