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
import io.grpc.LoadBalancer.SubchannelPicker;
import io.grpc.Status;
import io.grpc.util.ForwardingLoadBalancerHelper;
import io.steelyard.balancer.spi.PickerFactory;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.testkit.grpc.FakeHelper;
import io.steelyard.testkit.grpc.FakeHelper.FakeSubchannel;
import io.steelyard.testkit.time.FakeScheduler;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * How the balancer coalesces picker rebuilds: a burst of READY endpoints costs a few builds, the
 * last state is always published by the end of a window, and what the published picker must not
 * miss is published at once.
 */
class PickerRebuildsTest {

  private static final Duration WINDOW = Duration.ofMillis(PickerRebuilds.WINDOW_MILLIS);

  private final FakeHelper helper = new FakeHelper();
  private final FakeScheduler scheduler = new FakeScheduler();

  /** Counts every picker the policy builds, each group of a call as one. */
  private int builds;

  private final PickerFactory weightedRandom = WeightedRandomPicker.newFactory();
  private final PickerFactory counting =
      (pickers, weights) -> {
        builds++;
        return weightedRandom.newPicker(pickers, weights);
      };

  private final WeightedLoadBalancer lb =
      new WeightedLoadBalancer(
          new ForwardingLoadBalancerHelper() {
            @Override
            protected LoadBalancer.Helper delegate() {
              return helper;
            }

            @Override
            public ScheduledExecutorService getScheduledExecutorService() {
              return scheduler;
            }
          },
          "weighted_random",
          counting,
          scheduler.ticker);

  private boolean shutDown;

  @AfterEach
  void tearDown() {
    if (!shutDown) {
      helper.syncContext().execute(lb::shutdown);
    }
  }

  private List<FakeSubchannel> resolve(int n) {
    List<EquivalentAddressGroup> eags = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      eags.add(EndpointWeights.withWeight(
          new EquivalentAddressGroup(InetSocketAddress.createUnresolved("h" + i, 1)), 1 + i % 5));
    }
    helper.syncContext().execute(
        () -> lb.acceptResolvedAddresses(
            ResolvedAddresses.newBuilder().setAddresses(eags).setAttributes(Attributes.EMPTY)
                .build()));
    return new ArrayList<>(helper.liveSubchannels().values());
  }

  /** The endpoints the published picker picks among. */
  private int pickedEndpoints() {
    SubchannelPicker picker = helper.lastPicker();
    return picker instanceof WeightedPicker ? ((WeightedPicker) picker).size() : 0;
  }

  @Test
  void aBurstOfAThousandReadyEndpointsBuildsAFewPickersAndPublishesTheLastState() {
    List<FakeSubchannel> subchannels = resolve(1_000);
    for (FakeSubchannel sc : subchannels) {
      helper.deliver(sc, CONNECTING);
    }
    int buildsBefore = builds;

    // One READY every 0.1 ms: the whole burst spans 100 ms, two windows.
    for (FakeSubchannel sc : subchannels) {
      helper.deliver(sc, READY);
      scheduler.forwardTime(Duration.ofNanos(100_000));
    }
    scheduler.forwardTime(WINDOW);

    assertThat(builds - buildsBefore).isBetween(1, 5);
    assertThat(helper.lastState()).isEqualTo(READY);
    assertThat(pickedEndpoints()).isEqualTo(1_000);
  }

  @Test
  void theFirstReadyEndpointIsPublishedAtOnceAndTheRestOfTheBurstAtTheWindowsEnd() {
    List<FakeSubchannel> subchannels = resolve(200);

    helper.deliver(subchannels.get(0), READY);
    assertThat(helper.lastState()).isEqualTo(READY);
    assertThat(pickedEndpoints()).isEqualTo(1);

    for (int i = 1; i < 5; i++) {
      helper.deliver(subchannels.get(i), READY);
    }
    assertThat(pickedEndpoints()).isEqualTo(1);

    scheduler.forwardTime(WINDOW.minusNanos(1));
    assertThat(pickedEndpoints()).isEqualTo(1);
    scheduler.forwardTime(Duration.ofNanos(1));
    assertThat(pickedEndpoints()).isEqualTo(5);
  }

  @Test
  void anEndpointThatStopsBeingReadyLeavesThePickerAtOnceWithTheWaitingOnesJoining() {
    List<FakeSubchannel> subchannels = resolve(200);
    helper.deliver(subchannels.get(0), READY);
    helper.deliver(subchannels.get(1), READY); // waits for the window's end

    helper.deliver(subchannels.get(0), IDLE);

    assertThat(pickedEndpoints()).isEqualTo(1);
    assertThat(((WeightedPicker) helper.lastPicker()).childPickers[0].pickSubchannel(null)
        .getSubchannel()).isSameAs(subchannels.get(1));
  }

  @Test
  void aFailureIsPublishedAtOnce() {
    List<FakeSubchannel> subchannels = resolve(200);
    helper.deliver(subchannels.get(0), READY);
    helper.deliver(subchannels.get(1), READY);

    helper.deliver(subchannels.get(0),
        ConnectivityStateInfo.forTransientFailure(Status.UNAVAILABLE));

    assertThat(pickedEndpoints()).isEqualTo(1);
  }

  @Test
  void aReadyEndpointAfterAQuietWindowJoinsAtOnce() {
    List<FakeSubchannel> subchannels = resolve(200);
    helper.deliver(subchannels.get(0), READY);
    scheduler.forwardTime(WINDOW);

    helper.deliver(subchannels.get(1), READY);

    assertThat(pickedEndpoints()).isEqualTo(2);
  }

  @Test
  void connectingEndpointsCostNoBuildEach() {
    List<FakeSubchannel> subchannels = resolve(1_000);
    int buildsBefore = builds;
    helper.deliver(subchannels.get(0), READY);

    for (FakeSubchannel sc : subchannels.subList(1, 1_000)) {
      helper.deliver(sc, CONNECTING);
    }
    scheduler.forwardTime(WINDOW);

    assertThat(builds - buildsBefore).isBetween(1, 2);
    assertThat(pickedEndpoints()).isEqualTo(1);
  }

  @Test
  void withFewChildrenEveryChangeIsPublishedAtOnce() {
    List<FakeSubchannel> subchannels = resolve(PickerRebuilds.MIN_CHILDREN - 1);

    for (int i = 0; i < 10; i++) {
      helper.deliver(subchannels.get(i), READY);
      assertThat(pickedEndpoints()).isEqualTo(i + 1);
    }
  }

  @Test
  void noRebuildAfterShutdown() {
    List<FakeSubchannel> subchannels = resolve(200);
    helper.deliver(subchannels.get(0), READY);
    helper.deliver(subchannels.get(1), READY);
    int published = helper.pickers().size();

    helper.syncContext().execute(lb::shutdown);
    shutDown = true;
    scheduler.forwardTime(WINDOW);

    assertThat(helper.pickers()).hasSize(published);
  }
}
