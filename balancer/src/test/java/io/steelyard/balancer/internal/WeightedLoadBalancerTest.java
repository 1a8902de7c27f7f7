package io.steelyard.balancer.internal;

import static io.grpc.ConnectivityState.CONNECTING;
import static io.grpc.ConnectivityState.IDLE;
import static io.grpc.ConnectivityState.READY;
import static io.grpc.ConnectivityState.TRANSIENT_FAILURE;
import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.grpc.Attributes;
import io.grpc.ConnectivityStateInfo;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.ResolvedAddresses;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.grpc.Status;
import io.steelyard.balancer.spi.EffectiveWeights;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.registry.Localities;
import io.steelyard.testkit.grpc.FakeHelper;
import io.steelyard.testkit.grpc.FakeHelper.FakeSubchannel;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

class WeightedLoadBalancerTest {

  private static final SocketAddress A = InetSocketAddress.createUnresolved("a", 1);
  private static final SocketAddress B = InetSocketAddress.createUnresolved("b", 2);
  private static final SocketAddress C = InetSocketAddress.createUnresolved("c", 3);
  private static final Map<SocketAddress, String> NAMES = Map.of(A, "a", B, "b", C, "c");

  private final FakeHelper helper = new FakeHelper();
  private WeightedLoadBalancer lb;

  @AfterEach
  void shutdown() {
    if (lb != null) {
      helper.syncContext().execute(lb::shutdown);
    }
  }

  private WeightedLoadBalancer roundRobin() {
    lb =
        new WeightedLoadBalancer(
            helper,
            "weighted_round_robin_static",
            // Every stripe at slot 0: the test thread's picks start at the schedule's beginning.
            SmoothRoundRobinPicker.newFactory(new StripedPositions(new int[] {0, 0, 0, 0})));
    return lb;
  }

  private WeightedLoadBalancer random(long seed) {
    lb =
        new WeightedLoadBalancer(
            helper, "weighted_random", WeightedRandomPicker.newFactory(new Random(seed)));
    return lb;
  }

  private static EquivalentAddressGroup eag(SocketAddress address, int weight) {
    return EndpointWeights.withWeight(new EquivalentAddressGroup(address), weight);
  }

  private Status resolve(EquivalentAddressGroup... eags) {
    Status[] status = new Status[1];
    helper.syncContext().execute(
        () ->
            status[0] =
                lb.acceptResolvedAddresses(
                    ResolvedAddresses.newBuilder()
                        .setAddresses(List.of(eags))
                        .setAttributes(Attributes.EMPTY)
                        .build()));
    return status[0];
  }

  private Status resolveInZone(String callerZone, EquivalentAddressGroup... eags) {
    Status[] status = new Status[1];
    helper.syncContext().execute(
        () ->
            status[0] =
                lb.acceptResolvedAddresses(
                    ResolvedAddresses.newBuilder()
                        .setAddresses(List.of(eags))
                        .setAttributes(
                            Attributes.newBuilder().set(Localities.CALLER_ZONE, callerZone).build())
                        .build()));
    return status[0];
  }

  private static EquivalentAddressGroup eagInZone(SocketAddress address, int weight, String zone) {
    return EndpointWeights.withWeight(
        new EquivalentAddressGroup(address), weight, Map.of(Localities.ZONE_KEY, zone));
  }

  @Test
  void theResolversCallerZoneKeepsCallsLocalUntilTheLocalEndpointFails() {
    random(1);
    resolveInZone("a", eagInZone(A, 1, "a"), eagInZone(B, 1, "b"), eagInZone(C, 1, "b"));
    allReady();

    assertThat(pickNames(helper.lastPicker(), 200)).containsOnly("a");

    helper.deliver(subchannel(A), ConnectivityStateInfo.forTransientFailure(Status.UNAVAILABLE));

    assertThat(pickNames(helper.lastPicker(), 200)).containsOnly("b", "c");
  }

  private void allReady() {
    for (FakeSubchannel sc : helper.liveSubchannels().values()) {
      helper.deliver(sc, CONNECTING);
      helper.deliver(sc, READY);
    }
  }

  private FakeSubchannel subchannel(SocketAddress address) {
    return helper.liveSubchannels().get(address);
  }

  private static String pickName(SubchannelPicker picker) {
    PickResult result = picker.pickSubchannel(null);
    assertThat(result.getStatus().isOk()).as("pick status %s", result.getStatus()).isTrue();
    assertThat(result.getSubchannel()).as("picked subchannel").isNotNull();
    return NAMES.get(result.getSubchannel().getAddresses().getAddresses().get(0));
  }

  private static List<String> pickNames(SubchannelPicker picker, int count) {
    List<String> names = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      names.add(pickName(picker));
    }
    return names;
  }

  @Test
  void roundRobinPicksTheExactSmoothSequenceOverTwoPeriods() {
    roundRobin();
    resolve(eag(A, 1), eag(B, 2), eag(C, 5));
    allReady();

    assertThat(helper.lastState()).isEqualTo(READY);
    assertThat(pickNames(helper.lastPicker(), 16))
        .containsExactly(
            "c", "b", "c", "a", "c", "c", "b", "c", //
            "c", "b", "c", "a", "c", "c", "b", "c");
  }

  @Test
  void createsOnePickFirstSubchannelPerEndpointAndConnectsEagerly() {
    roundRobin();
    resolve(eag(A, 1), eag(B, 2), eag(C, 5));

    assertThat(helper.createdSubchannels()).hasSize(3);
    assertThat(helper.createdSubchannels()).allSatisfy(sc -> assertThat(sc.connectionRequests()).isEqualTo(1));
    assertThat(helper.lastState()).isEqualTo(CONNECTING);
    assertThat(helper.lastPicker().pickSubchannel(null).hasResult()).isFalse();
  }

  @Test
  void weightOnlyChangeKeepsEverySubchannelAndSwapsThePicker() {
    roundRobin();
    resolve(eag(A, 1), eag(B, 2), eag(C, 5));
    allReady();
    List<FakeSubchannel> before = List.copyOf(helper.createdSubchannels());
    SubchannelPicker oldPicker = helper.lastPicker();
    int updates = helper.pickers().size();

    resolve(eag(A, 1), eag(B, 1), eag(C, 1));

    assertThat(helper.createdSubchannels()).hasSize(3).containsExactlyElementsOf(before);
    assertThat(helper.createdSubchannels()).noneMatch(FakeSubchannel::isShutdown);
    assertThat(helper.createdSubchannels()).allSatisfy(sc -> assertThat(sc.connectionRequests()).isEqualTo(1));
    assertThat(helper.pickers()).hasSize(updates + 1);
    assertThat(helper.lastState()).isEqualTo(READY);
    assertThat(helper.lastPicker()).isNotEqualTo(oldPicker);
    assertThat(pickNames(helper.lastPicker(), 6)).containsExactly("a", "b", "c", "a", "b", "c");
  }

  @Test
  void attributeChangeThatKeepsWeightsPublishesNoNewPicker() {
    roundRobin();
    resolve(eag(A, 1), eag(B, 2));
    allReady();
    int updates = helper.pickers().size();

    resolve(
        EndpointWeights.withWeight(new EquivalentAddressGroup(A), 1, Map.of("zone", "x")),
        EndpointWeights.withWeight(new EquivalentAddressGroup(B), 2, Map.of("zone", "y")));

    assertThat(helper.pickers()).hasSize(updates);
    assertThat(helper.createdSubchannels()).hasSize(2);
  }

  @Test
  void newEndpointGetsOneSubchannelAndRemovedEndpointIsShutDown() {
    roundRobin();
    resolve(eag(A, 1), eag(B, 1));
    allReady();
    FakeSubchannel a = subchannel(A);
    FakeSubchannel b = subchannel(B);

    resolve(eag(B, 1), eag(C, 1));

    assertThat(helper.createdSubchannels()).hasSize(3);
    assertThat(a.isShutdown()).isTrue();
    assertThat(b.isShutdown()).isFalse();
    assertThat(pickNames(helper.lastPicker(), 4)).containsOnly("b");
  }

  @Test
  void onlyReadyEndpointsArePicked() {
    roundRobin();
    resolve(eag(A, 1), eag(B, 2), eag(C, 5));
    helper.deliver(subchannel(A), READY);
    helper.deliver(subchannel(B), CONNECTING);
    helper.deliver(
        subchannel(C), ConnectivityStateInfo.forTransientFailure(Status.UNAVAILABLE));

    assertThat(helper.lastState()).isEqualTo(READY);
    assertThat(pickNames(helper.lastPicker(), 20)).containsOnly("a");
  }

  @Test
  void endpointLeavingReadyStopsBeingPicked() {
    roundRobin();
    resolve(eag(A, 1), eag(B, 1));
    allReady();

    helper.deliver(
        subchannel(B), ConnectivityStateInfo.forTransientFailure(Status.UNAVAILABLE));

    assertThat(helper.lastState()).isEqualTo(READY);
    assertThat(pickNames(helper.lastPicker(), 10)).containsOnly("a");
  }

  @Test
  void stateIsConnectingUntilTheFirstEndpointIsReady() {
    roundRobin();
    resolve(eag(A, 1), eag(B, 1));
    helper.deliver(subchannel(A), CONNECTING);
    helper.deliver(
        subchannel(B), ConnectivityStateInfo.forTransientFailure(Status.UNAVAILABLE));
    assertThat(helper.lastState()).isEqualTo(CONNECTING);

    helper.deliver(subchannel(A), READY);

    assertThat(helper.states()).containsExactly(CONNECTING, READY);
  }

  @Test
  void stateIsTransientFailureWhenEveryEndpointFailedAndPicksCarryTheError() {
    roundRobin();
    resolve(eag(A, 1), eag(B, 1));
    Status down = Status.UNAVAILABLE.withDescription("connection refused");

    helper.deliver(subchannel(A), ConnectivityStateInfo.forTransientFailure(down));
    helper.deliver(subchannel(B), ConnectivityStateInfo.forTransientFailure(down));

    assertThat(helper.lastState()).isEqualTo(TRANSIENT_FAILURE);
    PickResult result = helper.lastPicker().pickSubchannel(null);
    assertThat(result.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(result.getStatus().getDescription()).contains("connection refused");
  }

  @Test
  void idleEndpointIsReconnectedAtOnce() {
    roundRobin();
    resolve(eag(A, 1));
    allReady();
    FakeSubchannel a = subchannel(A);
    int requests = a.connectionRequests();

    helper.deliver(a, IDLE);

    assertThat(a.connectionRequests()).isGreaterThan(requests);
    assertThat(helper.createdSubchannels()).hasSize(1);
  }

  @Test
  void resolverErrorWhileReadyKeepsServing() {
    roundRobin();
    resolve(eag(A, 1), eag(B, 1));
    allReady();
    int updates = helper.pickers().size();

    helper.syncContext().execute(
        () -> lb.handleNameResolutionError(Status.UNAVAILABLE.withDescription("etcd down")));

    assertThat(helper.pickers()).hasSize(updates);
    assertThat(helper.lastState()).isEqualTo(READY);
    assertThat(pickNames(helper.lastPicker(), 4)).containsExactly("a", "b", "a", "b");
  }

  @Test
  void resolverErrorBeforeAnyEndpointIsReadyFailsPicks() {
    roundRobin();
    resolve(eag(A, 1));

    helper.syncContext().execute(
        () -> lb.handleNameResolutionError(Status.UNAVAILABLE.withDescription("etcd down")));

    assertThat(helper.lastState()).isEqualTo(TRANSIENT_FAILURE);
    assertThat(helper.lastPicker().pickSubchannel(null).getStatus().getDescription())
        .isEqualTo("etcd down");
  }

  @Test
  void emptyResolutionWhileReadyKeepsServing() {
    roundRobin();
    resolve(eag(A, 1));
    allReady();

    Status status = resolve();

    assertThat(status.isOk()).isFalse();
    assertThat(helper.lastState()).isEqualTo(READY);
    assertThat(pickName(helper.lastPicker())).isEqualTo("a");
  }

  @Test
  void drainedEndpointIsNeverPickedWhileAnotherHasPositiveWeight() {
    random(7);
    resolve(eag(A, 0), eag(B, 3), eag(C, 0));
    allReady();

    assertThat(pickNames(helper.lastPicker(), 10_000)).containsOnly("b");
    assertThat(helper.liveSubchannels()).hasSize(3);
  }

  @Test
  void drainedEndpointsAreNotPickedEvenWhenThePositiveOnesAreNotReady() {
    roundRobin();
    resolve(eag(A, 0), eag(B, 3));
    helper.deliver(subchannel(A), READY);
    helper.deliver(subchannel(B), CONNECTING);

    assertThat(helper.lastState()).isEqualTo(CONNECTING);
    assertThat(helper.lastPicker().pickSubchannel(null).hasResult()).isFalse();
  }

  @Test
  void allDrainedFallsBackToEqualWeightsAndSaysSoOnceAtInfo() {
    ch.qos.logback.classic.Logger logger =
        (ch.qos.logback.classic.Logger) LoggerFactory.getLogger(EffectiveWeights.class);
    ListAppender<ILoggingEvent> appender = new ListAppender<>();
    Level levelBefore = logger.getLevel();
    logger.setLevel(Level.INFO);
    appender.start();
    logger.addAppender(appender);
    try {
      roundRobin();
      resolve(eag(A, 0), eag(B, 0), eag(C, 0));
      allReady();
      resolve(eag(A, 0), eag(B, 0), eag(C, 0));

      assertThat(pickNames(helper.lastPicker(), 6)).containsExactly("a", "b", "c", "a", "b", "c");
      assertThat(appender.list).noneMatch(e -> e.getLevel().isGreaterOrEqual(Level.WARN));
      assertThat(appender.list)
          .filteredOn(e -> e.getLevel() == Level.INFO)
          .hasSize(1)
          .first()
          .satisfies(e -> assertThat(e.getFormattedMessage()).contains("every endpoint (3) is drained"));
    } finally {
      logger.detachAppender(appender);
      logger.setLevel(levelBefore);
    }
  }

  @Test
  void undrainingAnEndpointRestoresItsShare() {
    roundRobin();
    resolve(eag(A, 0), eag(B, 1));
    allReady();

    resolve(eag(A, 1), eag(B, 1));

    assertThat(pickNames(helper.lastPicker(), 4)).containsExactly("a", "b", "a", "b");
    assertThat(helper.createdSubchannels()).hasSize(2);
  }

  @Test
  void endpointWithoutWeightAttributeWeighsOne() {
    roundRobin();
    resolve(new EquivalentAddressGroup(A), eag(B, 1));
    allReady();

    assertThat(pickNames(helper.lastPicker(), 4)).containsExactly("a", "b", "a", "b");
  }

  @Test
  void picksReturnThePrecomputedResultInstance() {
    roundRobin();
    resolve(eag(A, 1));
    allReady();
    SubchannelPicker picker = helper.lastPicker();

    PickResult first = picker.pickSubchannel(null);

    assertThat(picker.pickSubchannel(null)).isSameAs(first);
  }

  @Test
  void pickerIsPublishedOnlyWhenStateOrPickerChanges() {
    roundRobin();
    resolve(eag(A, 1), eag(B, 1));
    allReady();
    int updates = helper.pickers().size();

    resolve(eag(A, 1), eag(B, 1));
    helper.deliver(subchannel(A), READY);

    assertThat(helper.pickers()).hasSize(updates);
  }

  @Test
  void weightedRandomSharesFollowWeightsThroughTheBalancer() {
    random(42);
    resolve(eag(A, 1), eag(B, 2), eag(C, 5));
    allReady();
    SubchannelPicker picker = helper.lastPicker();
    Map<String, Integer> counts = new HashMap<>();
    int picks = 200_000;
    for (int i = 0; i < picks; i++) {
      counts.merge(pickName(picker), 1, Integer::sum);
    }

    assertThat(counts.get("a") / (double) picks).isCloseTo(1 / 8.0, within(0.005));
    assertThat(counts.get("b") / (double) picks).isCloseTo(2 / 8.0, within(0.005));
    assertThat(counts.get("c") / (double) picks).isCloseTo(5 / 8.0, within(0.005));
  }

  private static org.assertj.core.data.Offset<Double> within(double d) {
    return org.assertj.core.data.Offset.offset(d);
  }
}
