package io.steelyard.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;
import static org.awaitility.Awaitility.await;

import io.grpc.CallOptions;
import io.grpc.EquivalentAddressGroup;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.stub.ClientCalls;
import io.steelyard.testkit.grpc.StaticResolverProvider;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Slow start through a real channel to real Netty servers on loopback: a server that joins (a new
 * endpoint in a later resolution, as a new registration arrives by the etcd watch) gets a share
 * that rises over the window to its full one. One policy, weighted_round_robin_static, whose
 * exact proportions keep the bounds tight on few calls; the ramp is the same code for all three
 * and is tested under fake time in {@code SlowStartTest}.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SlowStartIntegrationTest {

  private static final long WINDOW_MILLIS = 4_000;

  private LoopbackCluster cluster;
  private StaticResolverProvider resolver;
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

  @Test
  void aJoiningServersShareRisesOverTheWindow() {
    List<EquivalentAddressGroup> all = cluster.endpoints(1, 1, 1);
    resolver = StaticResolverProvider.register("slowstart-it");
    String target = resolver.target("service", all.subList(0, 2));
    Map<String, Object> slowStart =
        Map.of("window", WINDOW_MILLIS / 1000 + "s", "minWeightPercent", 10.0);
    channel =
        Grpc.newChannelBuilder(target, InsecureChannelCredentials.create())
            .defaultServiceConfig(
                Map.of(
                    "loadBalancingConfig",
                    List.of(Map.of("weighted_round_robin_static", Map.of("slowStart", slowStart)))))
            .build();
    Set<String> seen = new HashSet<>();
    await().atMost(Duration.ofSeconds(30)).until(() -> seen.add(call()) && seen.size() == 2);
    // The first resolution's servers did not ramp: they share equally from the start.
    int a = 0;
    for (int i = 0; i < 200; i++) {
      a += call().equals("a") ? 1 : 0;
    }
    assertThat(a).isEqualTo(100);

    long joined = System.nanoTime();
    resolver.update("service", all);
    // Each call's start (ms after c joined) and whether c answered it, until after the window.
    List<long[]> calls = new ArrayList<>();
    long end = TimeUnit.MILLISECONDS.toNanos(WINDOW_MILLIS + 1_500);
    for (long t; (t = System.nanoTime() - joined) < end; ) {
      calls.add(new long[] {t / 1_000_000, call().equals("c") ? 1 : 0});
    }

    // c's weight is 10 % .. 25 % of a's over the first second: at most 11 % of the calls.
    double early = share(calls, 0, 1_000);
    // 38 % .. 75 %: 16 % .. 27 % of the calls.
    double middle = share(calls, 1_500, 3_000);
    // After the window: a third.
    double late = share(calls, WINDOW_MILLIS + 500, WINDOW_MILLIS + 1_500);
    assertThat(early).isLessThan(0.13);
    assertThat(middle).isBetween(0.13, 0.30);
    assertThat(late).isBetween(0.30, 0.37);
  }

  /**
   * c's share of the calls that started from {@code fromMillis} to {@code toMillis} after it
   * joined. Skips the test (it cannot judge) when the machine made fewer than 30 calls there.
   */
  private static double share(List<long[]> calls, long fromMillis, long toMillis) {
    long inPeriod = calls.stream().filter(c -> c[0] >= fromMillis && c[0] < toMillis).count();
    long byC =
        calls.stream().filter(c -> c[0] >= fromMillis && c[0] < toMillis && c[1] == 1).count();
    assumeThat(inPeriod)
        .as("calls from %s to %s ms: the machine is too loaded to measure shares", fromMillis, toMillis)
        .isGreaterThanOrEqualTo(30);
    return (double) byC / inPeriod;
  }
}
