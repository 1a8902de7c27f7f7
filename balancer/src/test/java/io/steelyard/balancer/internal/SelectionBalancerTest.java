package io.steelyard.balancer.internal;

import static io.grpc.ConnectivityState.CONNECTING;
import static io.grpc.ConnectivityState.READY;
import static io.grpc.ConnectivityState.TRANSIENT_FAILURE;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Attributes;
import io.grpc.ConnectivityStateInfo;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.ResolvedAddresses;
import io.grpc.Status;
import io.steelyard.balancer.spi.EndpointSelection;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.testkit.grpc.FakeHelper;
import io.steelyard.testkit.grpc.FakeHelper.FakeSubchannel;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The balancer reads each endpoint's metadata from the resolver's attribute for its selection. */
class SelectionBalancerTest {

  private static final SocketAddress A = InetSocketAddress.createUnresolved("a", 1);
  private static final SocketAddress B = InetSocketAddress.createUnresolved("b", 2);
  private static final SocketAddress C = InetSocketAddress.createUnresolved("c", 3);

  private final FakeHelper helper = new FakeHelper();
  private final WeightedLoadBalancer lb =
      new WeightedLoadBalancer(
          helper,
          "weighted_round_robin_static",
          SmoothRoundRobinPicker.newFactory(new StripedPositions(new int[] {0, 0, 0, 0})));

  @AfterEach
  void shutdown() {
    helper.syncContext().execute(lb::shutdown);
  }

  private static EquivalentAddressGroup eag(SocketAddress address, String version) {
    return EndpointWeights.withWeight(new EquivalentAddressGroup(address), 1, Map.of("version", version));
  }

  private void resolve(EndpointSelection selection, EquivalentAddressGroup... eags) {
    helper.syncContext().execute(
        () -> lb.acceptResolvedAddresses(
            ResolvedAddresses.newBuilder()
                .setAddresses(List.of(eags))
                .setAttributes(Attributes.EMPTY)
                .setLoadBalancingPolicyConfig(
                    WeightedPolicyConfig.builder().endpointSelection(selection).build())
                .build()));
  }

  private void ready(SocketAddress address) {
    FakeSubchannel sc = helper.liveSubchannels().get(address);
    helper.deliver(sc, CONNECTING);
    helper.deliver(sc, READY);
  }

  private List<SocketAddress> picks(int count) {
    List<SocketAddress> picked = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      PickResult result = helper.lastPicker().pickSubchannel(null);
      assertThat(result.getStatus().isOk()).as("pick status %s", result.getStatus()).isTrue();
      picked.add(result.getSubchannel().getAddresses().getAddresses().get(0));
    }
    return picked;
  }

  @Test
  void picksOnlyTheEndpointsWhoseRegisteredMetadataMatches() {
    resolve(EndpointSelection.select(List.of(Map.of("version", "v2")), true), eag(A, "v1"), eag(B, "v2"), eag(C, "v2"));
    ready(A);
    ready(B);
    ready(C);

    assertThat(picks(6)).containsOnly(B, C).contains(B, C);
  }

  @Test
  void aSelectionWhoseOnlyEndpointFailsFallsBackAndComesBackWhenItRecovers() {
    resolve(EndpointSelection.select(List.of(Map.of("version", "v2")), true), eag(A, "v1"), eag(B, "v2"));
    ready(A);
    ready(B);
    assertThat(picks(3)).containsOnly(B);

    helper.deliver(helper.liveSubchannels().get(B),
        ConnectivityStateInfo.forTransientFailure(Status.UNAVAILABLE));
    assertThat(helper.lastState()).isEqualTo(READY);
    assertThat(picks(3)).containsOnly(A);

    ready(B);
    assertThat(picks(3)).containsOnly(B);
  }

  @Test
  void fallbackNoneFailsCallsWhileTheBalancerStaysReady() {
    resolve(EndpointSelection.select(List.of(Map.of("version", "v2")), false), eag(A, "v1"), eag(B, "v2"));
    ready(A);

    PickResult result = helper.lastPicker().pickSubchannel(null);

    assertThat(result.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(result.getStatus().getDescription()).contains("{version=v2}");
    assertThat(helper.lastState()).isNotEqualTo(TRANSIENT_FAILURE);
  }
}
