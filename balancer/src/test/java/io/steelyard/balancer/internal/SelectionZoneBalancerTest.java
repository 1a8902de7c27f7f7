package io.steelyard.balancer.internal;

import static io.grpc.ConnectivityState.CONNECTING;
import static io.grpc.ConnectivityState.READY;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.grpc.Attributes;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.ResolvedAddresses;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.steelyard.balancer.spi.EndpointSelection;
import io.steelyard.balancer.spi.PickerFactory;
import io.steelyard.balancer.spi.TracerDecorator;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import io.steelyard.balancer.spi.ZoneRoutingConfig;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.testkit.grpc.FakeHelper;
import io.steelyard.testkit.grpc.FakeHelper.FakeSubchannel;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Split, then selection, then the zone step, then the policy's pick: each selection of a split routes
 * by the caller's zone over its own endpoints.
 */
class SelectionZoneBalancerTest {

  // v1: one endpoint in zone a, one in b. v2: two in a (one never READY), one in b of weight 2.
  private static final SocketAddress V1_A = InetSocketAddress.createUnresolved("v1-a", 1);
  private static final SocketAddress V1_B = InetSocketAddress.createUnresolved("v1-b", 2);
  private static final SocketAddress V2_A = InetSocketAddress.createUnresolved("v2-a", 3);
  private static final SocketAddress V2_A_DOWN = InetSocketAddress.createUnresolved("v2-a2", 4);
  private static final SocketAddress V2_B = InetSocketAddress.createUnresolved("v2-b", 5);

  private static final EndpointSelection SPLIT_50_50 =
      EndpointSelection.split(
          List.of(Map.of("version", "v1"), Map.of("version", "v2")),
          new int[] {5_000, 5_000});

  private final FakeHelper helper = new FakeHelper();
  private WeightedLoadBalancer lb;

  @AfterEach
  void shutdown() {
    helper.syncContext().execute(lb::shutdown);
  }

  private static EquivalentAddressGroup eag(
      SocketAddress address, int weight, String version, String zone) {
    return EndpointWeights.withWeight(
        new EquivalentAddressGroup(address), weight, Map.of("version", version, "zone", zone));
  }

  private void start(PickerFactory factory, double spillLoad) {
    lb = new WeightedLoadBalancer(helper, "weighted_random", factory);
    WeightedPolicyConfig config =
        WeightedPolicyConfig.builder()
            .endpointSelection(SPLIT_50_50)
            .zoneRouting(ZoneRoutingConfig.builder().zone("a").spillLoad(spillLoad).build())
            .build();
    helper.syncContext().execute(
        () -> lb.acceptResolvedAddresses(
            ResolvedAddresses.newBuilder()
                .setAddresses(List.of(
                    eag(V1_A, 1, "v1", "a"),
                    eag(V1_B, 1, "v1", "b"),
                    eag(V2_A, 1, "v2", "a"),
                    eag(V2_A_DOWN, 1, "v2", "a"),
                    eag(V2_B, 2, "v2", "b")))
                .setAttributes(Attributes.EMPTY)
                .setLoadBalancingPolicyConfig(config)
                .build()));
    for (SocketAddress address : List.of(V1_A, V1_B, V2_A, V2_B)) {
      FakeSubchannel sc = helper.liveSubchannels().get(address);
      helper.deliver(sc, CONNECTING);
      helper.deliver(sc, READY);
    }
  }

  private static Set<SocketAddress> picked(SubchannelPicker picker, int count) {
    Set<SocketAddress> picked = new HashSet<>();
    for (int i = 0; i < count; i++) {
      PickResult result = picker.pickSubchannel(null);
      assertThat(result.getStatus().isOk()).as("pick status %s", result.getStatus()).isTrue();
      picked.add(result.getSubchannel().getAddresses().getAddresses().get(0));
    }
    return picked;
  }

  @Test
  void eachSelectionOfASplitRoutesByZoneOverItsOwnEndpoints() {
    start(WeightedRandomPicker.newFactory(new Random(7)), 0);

    assertThat(helper.lastState()).isEqualTo(READY);
    assertThat(helper.lastPicker()).isInstanceOf(SplitPicker.class);
    SubchannelPicker[] selection = ((SplitPicker) helper.lastPicker()).selectionPickers();
    // v1: zone a's READY capacity (1 of 2) carries its registered share (1 of 2): all calls stay.
    assertThat(picked(selection[0], 200)).containsExactly(V1_A);
    // v2: zone a has 1 READY of 3 READY weight against 2 of 4 registered: keeps (1/3)/(2/4) =
    // 2/3 of v2's calls and spills the rest to zone b. Over all five endpoints the share would
    // be (2/5)/(3/6) = 4/5: the step must see the selection only.
    assertThat(selection[1]).isInstanceOf(ZonePicker.class);
    assertThat(((ZonePicker) selection[1]).localShare()).isCloseTo(2.0 / 3, within(1e-9));
    assertThat(picked(selection[1], 2_000)).containsExactlyInAnyOrder(V2_A, V2_B);
  }

  @Test
  void leastRequestKeepsOneLoadForEveryEndpointOfEverySelectionAndZone() {
    LeastRequestPickerFactory factory =
        new LeastRequestPickerFactory(new FakeTicker(), new Random(3), TracerDecorator.NONE);
    // With a live-load spill every zone of every selection gets a picker, so every READY endpoint
    // has a load, kept by one factory call per update.
    start(factory, ZoneRoutingConfig.DEFAULT_SPILL_LOAD);

    assertThat(helper.lastPicker()).isInstanceOf(SplitPicker.class);
    for (SocketAddress address : List.of(V1_A, V1_B, V2_A, V2_B)) {
      assertThat(factory.load(new EquivalentAddressGroup(address))).as("load of %s", address)
          .isNotNull();
    }
    assertThat(factory.load(new EquivalentAddressGroup(V2_A_DOWN))).isNull();
  }
}
