package io.steelyard.balancer.internal;

import static io.grpc.ConnectivityState.CONNECTING;
import static io.grpc.ConnectivityState.READY;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Attributes;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer.ResolvedAddresses;
import io.grpc.NameResolver.ConfigOrError;
import io.steelyard.balancer.spi.ClientSubset;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.testkit.grpc.FakeHelper;
import io.steelyard.testkit.grpc.FakeHelper.FakeSubchannel;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@code subsetSize} through a real {@link WeightedLoadBalancer} over a fake helper. */
class ClientSubsettingTest {

  private final FakeHelper helper = new FakeHelper();
  private WeightedLoadBalancer lb;

  @AfterEach
  void shutdown() {
    if (lb != null) {
      helper.syncContext().execute(lb::shutdown);
    }
  }

  private static Object config(Map<String, ?> raw) {
    ConfigOrError parsed = new PolicyConfigParser("weighted_random", Set.of()).parse(raw);
    assertThat(parsed.getError()).isNull();
    return parsed.getConfig();
  }

  private static List<EquivalentAddressGroup> fleet(int n, int weight) {
    List<EquivalentAddressGroup> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(EndpointWeights.withWeight(
          new EquivalentAddressGroup(new InetSocketAddress("10.0.0." + (i + 1), 50051)), weight + i % 3));
    }
    return out;
  }

  private void resolve(List<EquivalentAddressGroup> eags, Object config) {
    helper.syncContext().execute(() -> lb.acceptResolvedAddresses(ResolvedAddresses.newBuilder()
        .setAddresses(eags)
        .setAttributes(Attributes.EMPTY)
        .setLoadBalancingPolicyConfig(config)
        .build()));
  }

  private Set<String> live() {
    return helper.liveSubchannels().values().stream()
        .map(sc -> ClientSubsetting.name(sc.getAddresses()))
        .collect(Collectors.toSet());
  }

  @Test
  void onlyTheClientsSubsetGetsSubchannelsAndWeightChangesDoNotMoveIt() {
    lb = new WeightedLoadBalancer(helper, "weighted_random", WeightedRandomPicker.newFactory(new Random(1)));
    Object config = config(Map.of("subsetSize", 5.0, "subsetClientId", "client-a"));
    List<EquivalentAddressGroup> fleet = fleet(40, 1);
    resolve(fleet, config);

    Set<String> expected = ClientSubset.of("client-a", 5)
        .choose(fleet.stream().map(ClientSubsetting::name).toList(), Function.identity());
    assertThat(helper.createdSubchannels()).hasSize(5);
    assertThat(live()).isEqualTo(expected);
    for (FakeSubchannel sc : helper.liveSubchannels().values()) {
      helper.deliver(sc, CONNECTING);
      helper.deliver(sc, READY);
    }
    assertThat(helper.lastState()).isEqualTo(READY);

    resolve(fleet(40, 7), config); // every weight changed
    assertThat(helper.createdSubchannels()).as("no new connection").hasSize(5);
    assertThat(live()).isEqualTo(expected);

    // One endpoint more: at most one member of the client subset moves.
    List<EquivalentAddressGroup> grown = new ArrayList<>(fleet);
    grown.add(new EquivalentAddressGroup(new InetSocketAddress("10.0.1.1", 50051)));
    resolve(grown, config);
    Set<String> moved = new HashSet<>(expected);
    moved.removeAll(live());
    assertThat(moved).hasSizeLessThanOrEqualTo(1);
    assertThat(live()).hasSize(5);
  }

  @Test
  void withoutSubsetSizeEveryEndpointGetsASubchannel() {
    lb = new WeightedLoadBalancer(helper, "weighted_random", WeightedRandomPicker.newFactory(new Random(1)));
    resolve(fleet(12, 1), config(Map.of()));
    assertThat(helper.createdSubchannels()).hasSize(12);
  }

  @Test
  void subsetOptionsAreValidatedWithTheFieldNamed() {
    assertThat(((WeightedPolicyConfig) config(Map.of("subsetSize", 20.0))).clientSubset().clientIdentity())
        .isEqualTo(ClientSubsetOption.defaultIdentity());
    Map<String, String> errors = new HashMap<>();
    for (Map<String, ?> raw : List.<Map<String, ?>>of(
        Map.of("subsetSize", 0.0), Map.of("subsetSize", 2.5), Map.of("subsetSize", "20"),
        Map.of("subsetSize", 20.0, "subsetClientId", ""), Map.of("subsetClientId", "a"))) {
      ConfigOrError parsed = new PolicyConfigParser("weighted_random", Set.of()).parse(raw);
      assertThat(parsed.getConfig()).as("%s", raw).isNull();
      errors.put(raw.toString(), parsed.getError().getDescription());
    }
    assertThat(errors.values()).containsExactlyInAnyOrder(
        "weighted_random.subsetSize: 0.0 (expected: an integer 1..10000)",
        "weighted_random.subsetSize: 2.5 (expected: an integer 1..10000)",
        "weighted_random.subsetSize: 20 (expected: an integer 1..10000)",
        "weighted_random.subsetClientId:  (expected: a non-empty string)",
        "weighted_random.subsetClientId: set without subsetSize (expected: both, or subsetSize alone)");
  }
}
