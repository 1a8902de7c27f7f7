package io.steelyard.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;
import static org.awaitility.Awaitility.await;

import io.grpc.CallOptions;
import io.grpc.EquivalentAddressGroup;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.stub.ClientCalls;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Slow start through a real channel to real Netty servers on loopback, for each weighted policy:
 * a server that joins (a new endpoint in a later resolution, as a new registration arrives by the
 * etcd watch) gets less than its share during the window and its full share after it. The calls
 * are sequential, so every server is idle at each pick; what that means per policy is in {@link
 * #expectations}. The ramp itself is the same code for all of them and is tested under fake time
 * in {@code SlowStartTest}; the capacity benchmark's scenario (e) shows it under load.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class SlowStartIntegrationTest {

  private static final long WINDOW_MILLIS = 4_000;

  @RegisterExtension static final LoopbackFixture fixture = new LoopbackFixture("slowstart-it");

  /**
   * What the joiner's share of sequential calls should be, from the start time of each call after
   * the join: in the first second ({@code early}), from 1.5 s to 3 s ({@code middle}) and from
   * 4.5 s to 7 s, after the 4 s window ({@code late}). {@code minCalls} per period, fewer and the
   * test is skipped (the machine is too loaded to judge: 44 sequential calls a second have been
   * seen at a load average of 50 on 2 cores); random policies need more calls for the same bounds.
   */
  record Expectation(
      String policy,
      boolean exact,
      int minCalls,
      double earlyMax,
      double middleMin,
      double middleMax,
      double lateMin,
      double lateMax) {
    @Override
    public String toString() {
      return policy;
    }
  }

  static Stream<Arguments> expectations() {
    return Stream.of(
        // Exact proportions. The joiner's weight is 10 %..25 % of the others' over the first
        // second (at most 11 % of the calls), 38 %..75 % in the middle (16 %..27 %), then a third.
        Arguments.of(new Expectation("weighted_round_robin_static", true, 30, 0.13, 0.13, 0.30, 0.30, 0.37)),
        // The same shares in expectation (early about 7.5 %, middle about 22 %), drawn at random:
        // bounds about 3 standard deviations wide at 100 calls.
        Arguments.of(new Expectation("weighted_random", false, 100, 0.17, 0.10, 0.36, 0.20, 0.47)),
        // Two distinct candidates drawn by weight, the lower (outstanding + 1) / weight wins: with
        // every server idle a ramping joiner loses every comparison, so it gets (almost) nothing
        // until its weight is full, then a third. Under load it rises: benchmark scenario (e).
        Arguments.of(new Expectation("weighted_least_request", false, 100, 0.03, 0.0, 0.03, 0.20, 0.47)));
  }

  private String call() {
    return ClientCalls.blockingUnaryCall(
        fixture.channel, LoopbackCluster.WHO, CallOptions.DEFAULT.withDeadlineAfter(20, TimeUnit.SECONDS), "");
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("expectations")
  void aJoiningServersShareStaysLowDuringTheWindowAndIsFullAfterIt(Expectation expected) {
    List<EquivalentAddressGroup> all = fixture.cluster.endpoints(1, 1, 1);
    String target = fixture.resolver.target(expected.policy(), all.subList(0, 2));
    Map<String, Object> slowStart =
        Map.of("window", WINDOW_MILLIS / 1000 + "s", "minWeightPercent", 10.0);
    fixture.channel =
        Grpc.newChannelBuilder(target, InsecureChannelCredentials.create())
            .defaultServiceConfig(
                Map.of(
                    "loadBalancingConfig",
                    List.of(Map.of(expected.policy(), Map.of("slowStart", slowStart)))))
            .build();
    Set<String> seen = new HashSet<>();
    await().atMost(Duration.ofSeconds(30)).until(() -> seen.add(call()) && seen.size() == 2);
    // The first resolution's servers did not ramp: they share equally from the start.
    int a = 0;
    for (int i = 0; i < 200; i++) {
      a += call().equals("a") ? 1 : 0;
    }
    assertThat(a).isCloseTo(100, Offset.offset(expected.exact() ? 0 : 30));

    long joined = System.nanoTime();
    fixture.resolver.update(expected.policy(), all);
    // Each call's start (ms after c joined) and whether c answered it, until after the window.
    List<long[]> calls = new ArrayList<>();
    long end = TimeUnit.MILLISECONDS.toNanos(WINDOW_MILLIS + 3_000);
    for (long t; (t = System.nanoTime() - joined) < end; ) {
      calls.add(new long[] {t / 1_000_000, call().equals("c") ? 1 : 0});
    }

    double early = share(calls, 0, 1_000, expected.minCalls());
    double middle = share(calls, 1_500, 3_000, expected.minCalls());
    double late = share(calls, WINDOW_MILLIS + 500, WINDOW_MILLIS + 3_000, expected.minCalls());
    assertThat(early).isLessThan(expected.earlyMax());
    assertThat(middle).isBetween(expected.middleMin(), expected.middleMax());
    assertThat(late).isBetween(expected.lateMin(), expected.lateMax());
    assertThat(late).isGreaterThan(middle);
  }

  /**
   * c's share of the calls that started from {@code fromMillis} to {@code toMillis} after it
   * joined. Skips the test (it cannot judge) when the machine made fewer than {@code minCalls}.
   */
  private static double share(List<long[]> calls, long fromMillis, long toMillis, int minCalls) {
    long inPeriod = calls.stream().filter(c -> c[0] >= fromMillis && c[0] < toMillis).count();
    long byC =
        calls.stream().filter(c -> c[0] >= fromMillis && c[0] < toMillis && c[1] == 1).count();
    assumeThat(inPeriod)
        .as("calls from %s to %s ms: the machine is too loaded to measure shares", fromMillis, toMillis)
        .isGreaterThanOrEqualTo(minCalls);
    return (double) byC / inPeriod;
  }
}
