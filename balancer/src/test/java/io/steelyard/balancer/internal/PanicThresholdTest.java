package io.steelyard.balancer.internal;

import static io.grpc.ConnectivityState.CONNECTING;
import static io.grpc.ConnectivityState.IDLE;
import static io.grpc.ConnectivityState.READY;
import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.grpc.Attributes;
import io.grpc.ConnectivityStateInfo;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer;
import io.grpc.LoadBalancer.ResolvedAddresses;
import io.grpc.LongCounterMetricInstrument;
import io.grpc.MetricRecorder;
import io.grpc.Status;
import io.grpc.util.ForwardingLoadBalancerHelper;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.testkit.grpc.FakeHelper;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * The panic threshold through the balancer, with fake subchannels: which endpoints the picker
 * gets as endpoints become unusable and usable again, the log lines and the metric.
 */
class PanicThresholdTest {

  private static final SocketAddress A = InetSocketAddress.createUnresolved("a", 1);
  private static final SocketAddress B = InetSocketAddress.createUnresolved("b", 2);
  private static final SocketAddress C = InetSocketAddress.createUnresolved("c", 3);
  private static final SocketAddress D = InetSocketAddress.createUnresolved("d", 4);
  private static final Map<SocketAddress, String> NAMES = Map.of(A, "a", B, "b", C, "c", D, "d");
  private static final ConnectivityStateInfo UNHEALTHY =
      ConnectivityStateInfo.forTransientFailure(Status.UNAVAILABLE.withDescription("NOT_SERVING"));

  private final FakeHelper helper = new FakeHelper();
  /** Panic counter increments: (target, policy) per call. */
  private final List<List<String>> panicMetric = new ArrayList<>();
  private final ListAppender<ILoggingEvent> log = new ListAppender<>();
  private final ch.qos.logback.classic.Logger logger =
      (ch.qos.logback.classic.Logger) LoggerFactory.getLogger(PanicThreshold.class);
  private WeightedLoadBalancer lb;

  @BeforeEach
  void setUp() {
    log.start();
    logger.addAppender(log);
    LoadBalancer.Helper recording =
        new ForwardingLoadBalancerHelper() {
          @Override
          protected LoadBalancer.Helper delegate() {
            return helper;
          }

          @Override
          public String getChannelTarget() {
            return "static:///orders";
          }

          @Override
          public MetricRecorder getMetricRecorder() {
            return new MetricRecorder() {
              @Override
              public void addLongCounter(
                  LongCounterMetricInstrument metric,
                  long value,
                  List<String> required,
                  List<String> optional) {
                if (metric.getName().equals(WeightedLoadBalancer.PANIC_METRIC)) {
                  for (long i = 0; i < value; i++) {
                    List<String> labels = new ArrayList<>(required);
                    labels.addAll(optional);
                    panicMetric.add(labels);
                  }
                }
              }
            };
          }
        };
    lb =
        new WeightedLoadBalancer(
            recording,
            "weighted_round_robin_static",
            SmoothRoundRobinPicker.newFactory(new StripedPositions(new int[] {0, 0, 0, 0})));
  }

  @AfterEach
  void tearDown() {
    logger.detachAppender(log);
    helper.syncContext().execute(lb::shutdown);
  }

  private void resolve(int threshold, int... weights) {
    List<EquivalentAddressGroup> eags = new ArrayList<>();
    SocketAddress[] addresses = {A, B, C, D};
    for (int i = 0; i < weights.length; i++) {
      eags.add(EndpointWeights.withWeight(new EquivalentAddressGroup(addresses[i]), weights[i]));
    }
    helper.syncContext().execute(
        () ->
            lb.acceptResolvedAddresses(
                ResolvedAddresses.newBuilder()
                    .setAddresses(eags)
                    .setAttributes(Attributes.EMPTY)
                    .setLoadBalancingPolicyConfig(
                        WeightedPolicyConfig.builder().panicThresholdPercent(threshold).build())
                    .build()));
  }

  private void allReady() {
    for (FakeHelper.FakeSubchannel sc : helper.liveSubchannels().values()) {
      helper.deliver(sc, CONNECTING);
      helper.deliver(sc, READY);
    }
  }

  private void deliver(SocketAddress address, ConnectivityStateInfo state) {
    helper.deliver(helper.liveSubchannels().get(address), state);
  }

  /** The endpoints 40 picks reach (10 periods of equal weights). */
  private Set<String> picked() {
    assertThat(helper.lastState()).isEqualTo(READY);
    Set<String> names = new HashSet<>();
    for (int i = 0; i < 40; i++) {
      LoadBalancer.PickResult result = helper.lastPicker().pickSubchannel(null);
      names.add(NAMES.get(result.getSubchannel().getAddresses().getAddresses().get(0)));
    }
    return names;
  }

  private List<String> logLines(Level level) {
    return log.list.stream()
        .filter(e -> e.getLevel() == level)
        .map(ILoggingEvent::getFormattedMessage)
        .toList();
  }

  @Test
  void belowTheThresholdEveryConnectedEndpointIsPickedAgainUntilEnoughRecover() {
    resolve(50, 1, 1, 1, 1);
    allReady();
    deliver(B, UNHEALTHY);
    deliver(C, UNHEALTHY);

    // 2 of 4 usable is 50 %: not below the threshold, the exclusions hold.
    assertThat(picked()).containsExactlyInAnyOrder("a", "d");
    assertThat(panicMetric).isEmpty();

    // d loses its connection (IDLE): 1 usable of the 3 READY or failing, panic. b and c are
    // connected although excluded, so they are picked again; d has no connection to pick.
    deliver(D, ConnectivityStateInfo.forNonError(IDLE));
    assertThat(picked()).containsExactlyInAnyOrder("a", "b", "c");
    assertThat(panicMetric).containsExactly(List.of("static:///orders", "weighted_round_robin_static"));
    assertThat(logLines(Level.WARN))
        .singleElement()
        .asString()
        .contains("panic: only 1 of 3 READY or failing endpoints are usable, below the panic threshold of 50%");

    // Another change while panicking: still one panic, one warning.
    deliver(D, ConnectivityStateInfo.forNonError(CONNECTING));
    assertThat(picked()).containsExactlyInAnyOrder("a", "b", "c");
    assertThat(panicMetric).hasSize(1);
    assertThat(logLines(Level.WARN)).hasSize(1);

    // b recovers: 2 of 3 usable, panic over; c is excluded again.
    deliver(B, ConnectivityStateInfo.forNonError(READY));
    assertThat(picked()).containsExactlyInAnyOrder("a", "b");
    assertThat(logLines(Level.INFO)).singleElement().asString().contains("panic over: 2 of 3");

    // And a second panic counts again.
    deliver(B, UNHEALTHY);
    assertThat(picked()).containsExactlyInAnyOrder("a", "b", "c");
    assertThat(panicMetric).hasSize(2);
  }

  @Test
  void drainedEndpointsArePickedInPanicWithWeightOne() {
    resolve(50, 0, 3, 3, 3);
    allReady();
    deliver(B, UNHEALTHY);
    deliver(C, UNHEALTHY);

    // Usable: d only (a is drained), 1 of 4.
    Set<String> picked = picked();
    assertThat(picked).containsExactlyInAnyOrder("a", "b", "c", "d");
    int a = 0;
    for (int i = 0; i < 100; i++) {
      LoadBalancer.PickResult result = helper.lastPicker().pickSubchannel(null);
      a += result.getSubchannel().getAddresses().getAddresses().get(0) == A ? 1 : 0;
    }
    // Weights 1 : 3 : 3 : 3, a period of 10 picks: exactly 10 of 100 go to a.
    assertThat(a).isEqualTo(10);
  }

  @Test
  void aChannelStillConnectingDoesNotPanic() {
    resolve(50, 1, 1, 1, 1);
    deliver(A, ConnectivityStateInfo.forNonError(CONNECTING));
    deliver(A, ConnectivityStateInfo.forNonError(READY));

    // 1 of 4 READY, the other 3 still connecting: a start, not a failure.
    assertThat(picked()).containsExactly("a");
    assertThat(panicMetric).isEmpty();
    assertThat(logLines(Level.WARN)).isEmpty();
  }

  @Test
  void withoutAThresholdExclusionsHoldWhateverIsLeft() {
    resolve(0, 1, 1, 1, 1);
    allReady();
    deliver(B, UNHEALTHY);
    deliver(C, UNHEALTHY);
    deliver(D, UNHEALTHY);

    assertThat(picked()).containsExactly("a");
    assertThat(panicMetric).isEmpty();
    assertThat(logLines(Level.WARN)).isEmpty();
  }

  @Test
  void aThresholdOfAHundredPanicsAsSoonAsOneEndpointIsExcluded() {
    resolve(100, 1, 1, 1);
    allReady();

    deliver(B, UNHEALTHY);

    assertThat(picked()).containsExactlyInAnyOrder("a", "b", "c");
    assertThat(panicMetric).hasSize(1);
  }
}
