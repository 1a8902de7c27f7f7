package io.steelyard.balancer.internal;

import static io.grpc.ConnectivityState.CONNECTING;
import static io.grpc.ConnectivityState.IDLE;
import static io.grpc.ConnectivityState.READY;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Attributes;
import io.grpc.ConnectivityStateInfo;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer;
import io.grpc.LoadBalancer.ResolvedAddresses;
import io.grpc.Status;
import io.grpc.util.ForwardingLoadBalancerHelper;
import io.steelyard.balancer.spi.SlowStartConfig;
import io.steelyard.balancer.spi.SlowStartWeights;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.testkit.grpc.FakeHelper;
import io.steelyard.testkit.time.FakeScheduler;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Slow start through the balancer, with fake subchannels and fake time (the helper's scheduler
 * and the balancer's ticker are one {@link FakeScheduler}): which endpoints ramp, their weights
 * over the window, and the rebuild timer.
 */
class SlowStartTest {

  private static final SocketAddress A = InetSocketAddress.createUnresolved("a", 1);
  private static final SocketAddress B = InetSocketAddress.createUnresolved("b", 2);
  private static final SocketAddress C = InetSocketAddress.createUnresolved("c", 3);
  private static final SocketAddress[] ADDRESSES = {A, B, C};
  private static final Map<SocketAddress, String> NAMES = Map.of(A, "a", B, "b", C, "c");
  private static final long WINDOW_NANOS = TimeUnit.SECONDS.toNanos(10);
  private static final SlowStartConfig LINEAR = new SlowStartConfig(WINDOW_NANOS, 1.0, 10);

  private final FakeHelper helper = new FakeHelper();
  private final FakeScheduler scheduler = new FakeScheduler();
  private WeightedLoadBalancer lb;

  @BeforeEach
  void setUp() {
    LoadBalancer.Helper timed =
        new ForwardingLoadBalancerHelper() {
          @Override
          protected LoadBalancer.Helper delegate() {
            return helper;
          }

          @Override
          public ScheduledExecutorService getScheduledExecutorService() {
            return scheduler;
          }
        };
    lb =
        new WeightedLoadBalancer(
            timed, "weighted_random", WeightedRandomPicker.newFactory(), scheduler.ticker);
  }

  @AfterEach
  void tearDown() {
    helper.syncContext().execute(lb::shutdown);
  }

  /** Resolves the first {@code weights.length} of a, b, c with these weights. */
  private void resolve(SlowStartConfig slowStart, int... weights) {
    List<EquivalentAddressGroup> eags = new ArrayList<>();
    for (int i = 0; i < weights.length; i++) {
      eags.add(EndpointWeights.withWeight(new EquivalentAddressGroup(ADDRESSES[i]), weights[i]));
    }
    helper.syncContext().execute(
        () ->
            lb.acceptResolvedAddresses(
                ResolvedAddresses.newBuilder()
                    .setAddresses(eags)
                    .setAttributes(Attributes.EMPTY)
                    .setLoadBalancingPolicyConfig(
                        slowStart == null
                            ? WeightedPolicyConfig.DEFAULT
                            : WeightedPolicyConfig.builder().slowStart(slowStart).build())
                    .build()));
  }

  private void ready(SocketAddress address) {
    FakeHelper.FakeSubchannel sc = helper.liveSubchannels().get(address);
    helper.deliver(sc, CONNECTING);
    helper.deliver(sc, READY);
  }

  private void deliver(SocketAddress address, ConnectivityStateInfo state) {
    helper.deliver(helper.liveSubchannels().get(address), state);
  }

  /** The weights of the last published picker, by endpoint name. */
  private Map<String, Integer> weights() {
    assertThat(helper.lastState()).isEqualTo(READY);
    WeightedPicker picker = (WeightedPicker) helper.lastPicker();
    Map<String, Integer> weights = new TreeMap<>();
    for (int i = 0; i < picker.size(); i++) {
      LoadBalancer.Subchannel sc = picker.childPickers[i].pickSubchannel(null).getSubchannel();
      weights.put(NAMES.get(sc.getAddresses().getAddresses().get(0)), picker.weights[i]);
    }
    return weights;
  }

  private void forward(long millis) {
    scheduler.forwardTime(Duration.ofMillis(millis));
  }

  @Test
  void endpointsOfTheFirstResolutionDoNotRampSoAClientRestartSendsThemTheirFullShare() {
    resolve(LINEAR, 1, 3);
    ready(A);
    forward(2_000); // b connects late: still one of the servers that were there before us
    ready(B);

    assertThat(weights()).isEqualTo(Map.of("a", 1, "b", 3));
    assertThat(scheduler.pending()).isZero();
  }

  @Test
  void anEndpointOfALaterResolutionRampsLinearlyFromTheMinimumToItsFullWeight() {
    resolve(LINEAR, 1, 1);
    ready(A);
    ready(B);
    resolve(LINEAR, 1, 1, 2);
    forward(1_000); // connecting does not eat the ramp: it starts when c is READY
    ready(C);

    assertThat(weights()).isEqualTo(Map.of("a", 100, "b", 100, "c", 20)); // 10 % of 2 × 100
    forward(2_000);
    assertThat(weights()).isEqualTo(Map.of("a", 100, "b", 100, "c", 40)); // 20 %
    forward(3_000);
    assertThat(weights()).isEqualTo(Map.of("a", 100, "b", 100, "c", 100)); // 50 %
    forward(3_500);
    assertThat(weights()).isEqualTo(Map.of("a", 100, "b", 100, "c", 170)); // 85 %
    forward(1_000);
    assertThat(weights()).isEqualTo(Map.of("a", 100, "b", 100, "c", 190)); // 95 %
    forward(500);
    // The window is over: declared weights again, and no more rebuilds.
    assertThat(weights()).isEqualTo(Map.of("a", 1, "b", 1, "c", 2));
    assertThat(scheduler.pending()).isZero();
    int published = helper.pickers().size();
    forward(60_000);
    assertThat(helper.pickers()).hasSize(published);
  }

  @Test
  void rebuildsRunEveryTwentiethOfTheWindowAndNoMoreOftenThanEveryQuarterSecond() {
    resolve(LINEAR, 1);
    ready(A);
    resolve(LINEAR, 1, 1);
    ready(B);
    int published = helper.pickers().size();
    int ran = scheduler.ran();

    forward(10_000);

    // 10 s / 20 = 500 ms: 20 rebuilds over the window, the last one ending the ramp. The ones at
    // 0.5 s and 1 s give the same weights as the one before (the 10 % floor), so the balancer
    // does not publish them.
    assertThat(scheduler.delaysNanos()).containsOnly(TimeUnit.MILLISECONDS.toNanos(500));
    assertThat(scheduler.ran() - ran).isEqualTo(20);
    assertThat(helper.pickers().size() - published).isEqualTo(18);
    assertThat(weights()).isEqualTo(Map.of("a", 1, "b", 1));
    assertThat(scheduler.pending()).isZero();
    assertThat(SlowStartWeights.refreshDelayNanos(new SlowStartConfig(TimeUnit.SECONDS.toNanos(2), 1, 10)))
        .isEqualTo(TimeUnit.MILLISECONDS.toNanos(250));
  }

  @Test
  void aggressionBendsTheRampAndTheMinimumHoldsItsFloor() {
    SlowStartConfig fast = new SlowStartConfig(WINDOW_NANOS, 2.0, 5);
    resolve(fast, 1);
    ready(A);
    resolve(fast, 1, 1);
    ready(B);

    assertThat(weights()).isEqualTo(Map.of("a", 100, "b", 5)); // (0)^(1/2) = 0: the 5 % floor
    forward(100);
    assertThat(weights()).isEqualTo(Map.of("a", 100, "b", 5)); // sqrt(1 %) = 10 %, published at 500 ms
    forward(400);
    assertThat(weights()).isEqualTo(Map.of("a", 100, "b", 22)); // sqrt(5 %) = 22.4 %
    forward(2_000);
    assertThat(weights()).isEqualTo(Map.of("a", 100, "b", 50)); // sqrt(25 %) = 50 %
  }

  @Test
  void anUndrainRamps() {
    resolve(LINEAR, 1, 0);
    ready(A);
    ready(B);
    assertThat(weights()).isEqualTo(Map.of("a", 1));

    resolve(LINEAR, 1, 1);

    assertThat(weights()).isEqualTo(Map.of("a", 100, "b", 10));
    forward(5_000);
    assertThat(weights()).isEqualTo(Map.of("a", 100, "b", 50));
  }

  @Test
  void anEndpointReadyAgainAfterAFailureOrALostConnectionRampsAgain() {
    resolve(LINEAR, 1, 1);
    ready(A);
    ready(B);
    assertThat(weights()).isEqualTo(Map.of("a", 1, "b", 1));

    // NOT_SERVING (or an outlier ejection), then back.
    deliver(B, ConnectivityStateInfo.forTransientFailure(Status.UNAVAILABLE));
    forward(3_000);
    deliver(B, ConnectivityStateInfo.forNonError(READY));
    assertThat(weights()).isEqualTo(Map.of("a", 100, "b", 10));
    forward(5_000);
    assertThat(weights()).isEqualTo(Map.of("a", 100, "b", 50));

    // Mid-ramp, the connection drops (a restarted server): the ramp starts over when it is back.
    deliver(B, ConnectivityStateInfo.forNonError(IDLE));
    assertThat(weights()).isEqualTo(Map.of("a", 1));
    assertThat(scheduler.pending()).isZero();
    ready(B);
    assertThat(weights()).isEqualTo(Map.of("a", 100, "b", 10));
  }

  @Test
  void anEndpointRemovedAndAddedAgainRampsAsANewOne() {
    resolve(LINEAR, 1, 1);
    ready(A);
    ready(B);
    resolve(LINEAR, 1);
    resolve(LINEAR, 1, 1);
    ready(B);

    assertThat(weights()).isEqualTo(Map.of("a", 100, "b", 10));
  }

  @Test
  void heavyWeightsAreScaledLessSoNoneExceedsTheMaximum() {
    resolve(LINEAR, EndpointWeights.MAX_WEIGHT / 2);
    ready(A);
    resolve(LINEAR, EndpointWeights.MAX_WEIGHT / 2, EndpointWeights.MAX_WEIGHT / 2);
    ready(B);

    assertThat(weights()).isEqualTo(Map.of("a", 1_000_000, "b", 100_000)); // scaled × 2
  }

  @Test
  void withoutSlowStartNothingRampsAndNoTimerRuns() {
    resolve(null, 1, 1);
    ready(A);
    ready(B);
    resolve(null, 1, 1, 1);
    ready(C);

    assertThat(weights()).isEqualTo(Map.of("a", 1, "b", 1, "c", 1));
    assertThat(scheduler.pending()).isZero();
  }

  @Test
  void shutdownCancelsTheRebuildTimer() {
    resolve(LINEAR, 1);
    ready(A);
    resolve(LINEAR, 1, 1);
    ready(B);
    assertThat(scheduler.pending()).isEqualTo(1);

    helper.syncContext().execute(lb::shutdown);

    assertThat(scheduler.pending()).isZero();
  }

  @Test
  void factorFollowsEnvoysFormula() {
    SlowStartConfig config = new SlowStartConfig(1_000, 4.0, 10);

    assertThat(config.factor(0)).isEqualTo(0.1);
    assertThat(config.factor(1)).isEqualTo(Math.pow(0.001, 0.25)); // 0.178 > 0.1
    assertThat(config.factor(500)).isEqualTo(Math.pow(0.5, 0.25));
    assertThat(config.factor(1_000)).isEqualTo(1.0);
    assertThat(config.factor(5_000)).isEqualTo(1.0);
  }
}
