package io.steelyard.balancer.internal;

import static io.grpc.ConnectivityState.CONNECTING;
import static io.grpc.ConnectivityState.READY;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Attributes;
import io.grpc.ClientStreamTracer;
import io.grpc.ConnectivityStateInfo;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.ResolvedAddresses;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.grpc.Metadata;
import io.grpc.Status;
import io.steelyard.balancer.spi.TracerDecorator;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.testkit.grpc.FakeHelper;
import io.steelyard.testkit.grpc.FakeHelper.FakeSubchannel;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** weighted_least_request through the shared balancer and a fake helper. */
class WeightedLeastRequestBalancerTest {

  private static final SocketAddress A = InetSocketAddress.createUnresolved("a", 1);
  private static final SocketAddress B = InetSocketAddress.createUnresolved("b", 2);
  private static final SocketAddress C = InetSocketAddress.createUnresolved("c", 3);

  private final FakeHelper helper = new FakeHelper();
  private final FakeTicker ticker = new FakeTicker();
  private final LeastRequestPickerFactory pickers =
      new LeastRequestPickerFactory(ticker, new Random(5), TracerDecorator.NONE);
  private final WeightedLoadBalancer lb =
      new WeightedLoadBalancer(helper, "weighted_least_request", pickers);

  @AfterEach
  void shutdown() {
    helper.syncContext().execute(lb::shutdown);
  }

  private static EquivalentAddressGroup eag(SocketAddress address, int weight) {
    return EndpointWeights.withWeight(new EquivalentAddressGroup(address), weight);
  }

  private void resolve(Object config, EquivalentAddressGroup... eags) {
    helper.syncContext().execute(
        () ->
            lb.acceptResolvedAddresses(
                ResolvedAddresses.newBuilder()
                    .setAddresses(List.of(eags))
                    .setAttributes(Attributes.EMPTY)
                    .setLoadBalancingPolicyConfig(config)
                    .build()));
  }

  private void allReady() {
    for (FakeSubchannel sc : helper.liveSubchannels().values()) {
      helper.deliver(sc, CONNECTING);
      helper.deliver(sc, READY);
    }
  }

  private static SocketAddress addressOf(PickResult result) {
    return result.getSubchannel().getAddresses().getAddresses().get(0);
  }

  @Test
  void weightOnlyChangeKeepsEverySubchannelAndEveryEndpointsLoad() {
    resolve(null, eag(A, 1), eag(B, 2), eag(C, 5));
    allReady();
    List<FakeSubchannel> before = List.copyOf(helper.createdSubchannels());
    LeastRequestPicker oldPicker = (LeastRequestPicker) helper.lastPicker();
    EndpointLoad loadOfA = pickers.load(eag(A, 1));
    loadOfA.callStarted();

    resolve(null, eag(A, 5), eag(B, 2), eag(C, 1));

    assertThat(helper.createdSubchannels()).containsExactlyElementsOf(before);
    assertThat(helper.createdSubchannels()).noneMatch(FakeSubchannel::isShutdown);
    assertThat(helper.createdSubchannels()).allSatisfy(sc -> assertThat(sc.connectionRequests()).isEqualTo(1));
    assertThat(helper.lastPicker()).isNotEqualTo(oldPicker);
    assertThat(pickers.load(eag(A, 5)))
        .isSameAs(loadOfA);
    assertThat(loadOfA.outstanding()).isEqualTo(1);
  }

  @Test
  void anOpenCallSteersTheNextPicksToTheOtherEndpoint() {
    resolve(null, eag(A, 1), eag(B, 1));
    allReady();
    SubchannelPicker picker = helper.lastPicker();

    SocketAddress busy = addressOf(startCallResult(picker));

    // Two endpoints: both are compared on every pick, and (1 + 1) / 1 loses to (0 + 1) / 1.
    for (int i = 0; i < 20; i++) {
      assertThat(addressOf(picker.pickSubchannel(null))).isNotEqualTo(busy);
    }
  }

  @Test
  void callsSpreadInProportionToWeightWhileTheyStayOpen() {
    resolve(null, eag(A, 1), eag(B, 3));
    allReady();
    SubchannelPicker picker = helper.lastPicker();

    int onA = 0;
    for (int i = 0; i < 40; i++) {
      if (addressOf(startCallResult(picker)).equals(A)) {
        onA++;
      }
    }

    // Outstanding calls settle where (out + 1) / weight is level: 10 on A, 30 on B, within one.
    assertThat(onA).isBetween(9, 11);
  }

  /** Picks and starts a call on the result; the call stays open. */
  private static PickResult startCallResult(SubchannelPicker picker) {
    PickResult result = picker.pickSubchannel(null);
    result
        .getStreamTracerFactory()
        .newClientStreamTracer(ClientStreamTracer.StreamInfo.newBuilder().build(), new Metadata())
        .streamCreated(Attributes.EMPTY, new Metadata());
    return result;
  }

  @Test
  void choiceCountFromTheServiceConfigReachesThePicker() {
    resolve(null, eag(A, 1), eag(B, 1), eag(C, 1));
    allReady();
    SubchannelPicker defaultPicker = helper.lastPicker();

    resolve(WeightedPolicyConfig.builder().choiceCount(4).build(), eag(A, 1), eag(B, 1), eag(C, 1));

    assertThat(helper.lastPicker()).isNotEqualTo(defaultPicker);
    assertThat(helper.lastPicker().toString()).contains("choiceCount=4");
    assertThat(helper.createdSubchannels()).hasSize(3);
  }

  @Test
  void anEndpointThatLeavesReadyIsNotPickedAndComesBackWithAFreshLoad() {
    resolve(null, eag(A, 1), eag(B, 1));
    allReady();
    var keyA = eag(A, 1);
    pickers.load(keyA).callStarted();

    helper.deliver(
        helper.liveSubchannels().get(A), ConnectivityStateInfo.forTransientFailure(Status.UNAVAILABLE));
    for (int i = 0; i < 50; i++) {
      assertThat(addressOf(helper.lastPicker().pickSubchannel(null))).isEqualTo(B);
    }
    assertThat(pickers.load(keyA)).isNull();

    helper.deliver(helper.liveSubchannels().get(A), READY);
    assertThat(pickers.load(keyA).outstanding()).isZero();
  }
}
