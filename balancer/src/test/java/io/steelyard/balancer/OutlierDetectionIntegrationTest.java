package io.steelyard.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.grpc.CallOptions;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.slf4j.LoggerFactory;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * grpc-java's {@code outlier_detection_experimental} as the parent of each steelyard policy,
 * selected through the service config, over real channels to three Netty servers on loopback:
 * a server failing every call is ejected, the others keep their declared proportions, and the
 * server comes back after the base ejection time, with its own weight. Bounds are generous: a
 * loaded 2-CPU machine has made calls 70 ms slow.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class OutlierDetectionIntegrationTest {

  private static final Duration BASE_EJECTION_TIME = Duration.ofSeconds(5);

  @RegisterExtension static final LoopbackFixture fixture = new LoopbackFixture("static-outlier");

  private long lastFailureNanos;

  /** The service config of docs/balancer.md, "Outlier ejection", with {@code policy} as child. */
  static Map<String, Object> serviceConfig(String policy) {
    return serviceConfig(policy, Map.of());
  }

  static Map<String, Object> serviceConfig(String policy, Map<String, ?> policyConfig) {
    return Map.of(
        "loadBalancingConfig",
        List.of(
            Map.of(
                "outlier_detection_experimental",
                Map.of(
                    "interval", "0.2s",
                    "baseEjectionTime", BASE_EJECTION_TIME.toMillis() / 1000.0 + "s",
                    "maxEjectionTime", "30s",
                    "maxEjectionPercentage", 50.0,
                    "failurePercentageEjection",
                        Map.of(
                            "threshold", 50.0,
                            "enforcementPercentage", 100.0,
                            "minimumHosts", 3.0,
                            "requestVolume", 5.0),
                    "childPolicy", List.of(Map.of(policy, policyConfig))))));
  }

  /** The answering server's name, or {@code !name} when that server failed the call. */
  private String call() {
    try {
      return ClientCalls.blockingUnaryCall(
          fixture.channel, LoopbackCluster.WHO, CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS), "");
    } catch (StatusRuntimeException e) {
      lastFailureNanos = System.nanoTime();
      return "!" + e.getStatus().getDescription();
    }
  }

  private Map<String, Integer> calls(int count) {
    Map<String, Integer> counts = new HashMap<>();
    for (int i = 0; i < count; i++) {
      counts.merge(call(), 1, Integer::sum);
    }
    return counts;
  }

  private static double percent(Map<String, Integer> counts, String name, int total) {
    return 100.0 * counts.getOrDefault(name, 0) / total;
  }

  @ParameterizedTest
  @ValueSource(strings = {"weighted_random", "weighted_round_robin_static"})
  void serverFailingEveryCallIsEjectedAndReturnsLaterWhileWeightsHold(String policy) {
    String target = fixture.resolver.target("od-" + policy, fixture.cluster.endpoints(1, 3, 2));
    fixture.channel =
        Grpc.newChannelBuilder(target, InsecureChannelCredentials.create())
            .defaultServiceConfig(serviceConfig(policy))
            .build();
    await().atMost(Duration.ofSeconds(30)).until(() -> calls(60).keySet().equals(Set.of("a", "b", "c")));

    fixture.cluster.setFailing(2, true);

    // Failure-percentage ejection at the next 0.2 s interval with enough calls to c.
    await()
        .atMost(Duration.ofSeconds(15))
        .pollInterval(Duration.ofMillis(20))
        .until(() -> calls(40).keySet().equals(Set.of("a", "b")));
    long ejectedBy = lastFailureNanos;
    // 40 calls in a row without c: c (a third of the weight) is out. Whether it is still out
    // or already back (a loaded machine can make calls slow), a and b share 1 : 3 throughout.
    Map<String, Integer> whileEjected = calls(400);
    int ab = whileEjected.getOrDefault("a", 0) + whileEjected.getOrDefault("b", 0);
    assertThat(100.0 * whileEjected.getOrDefault("a", 0) / ab).isCloseTo(25.0, within(7.0));

    fixture.cluster.setFailing(2, false);

    await()
        .atMost(Duration.ofSeconds(40))
        .pollInterval(Duration.ofMillis(20))
        .until(() -> calls(30).containsKey("c"));
    // c failed its last call before the ejection, so it was out at least the base ejection time.
    assertThat(Duration.ofNanos(System.nanoTime() - ejectedBy)).isGreaterThanOrEqualTo(BASE_EJECTION_TIME);
    Map<String, Integer> afterReturn = calls(900);
    assertThat(afterReturn).containsOnlyKeys("a", "b", "c");
    assertThat(percent(afterReturn, "a", 900)).isCloseTo(100.0 / 6, within(5.5));
    assertThat(percent(afterReturn, "b", 900)).isCloseTo(300.0 / 6, within(5.5));
    assertThat(percent(afterReturn, "c", 900)).isCloseTo(200.0 / 6, within(5.5));
  }

  // One policy suffices: panic is decided in the balancer both policies share.
  @ParameterizedTest
  @ValueSource(strings = {"weighted_random"})
  void panicThresholdKeepsAnEjectedServerInUseWhenTooFewAreLeft(String policy) {
    ch.qos.logback.classic.Logger logger =
        (ch.qos.logback.classic.Logger)
            LoggerFactory.getLogger("io.steelyard.balancer.internal.PanicThreshold");
    ListAppender<ILoggingEvent> log = new ListAppender<>();
    log.start();
    logger.addAppender(log);
    try {
      String target = fixture.resolver.target("panic-" + policy, fixture.cluster.endpoints(1, 1, 1));
      // Ejecting c leaves 2 of 3 (67 %) usable, below 70 %.
      fixture.channel =
          Grpc.newChannelBuilder(target, InsecureChannelCredentials.create())
              .defaultServiceConfig(serviceConfig(policy, Map.of("panicThresholdPercent", 70.0)))
              .build();
      await().atMost(Duration.ofSeconds(30)).until(() -> calls(60).keySet().equals(Set.of("a", "b", "c")));

      fixture.cluster.setFailing(2, true);

      await()
          .atMost(Duration.ofSeconds(15))
          .pollInterval(Duration.ofMillis(20))
          .until(
              () -> {
                calls(20);
                return log.list.stream()
                    .anyMatch(e -> e.getLevel() == Level.WARN && e.getFormattedMessage().contains("panic:"));
              });
      // In panic the ejected server's connection is still used: its share holds.
      Map<String, Integer> inPanic = calls(300);
      assertThat(percent(inPanic, "!c", 300)).isCloseTo(100.0 / 3, within(10.0));
    } finally {
      logger.detachAppender(log);
    }
  }
}
