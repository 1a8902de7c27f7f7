package io.steelyard.balancer.extension;

import static io.grpc.ConnectivityState.READY;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Attributes;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer;
import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.ResolvedAddresses;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.grpc.NameResolver.ConfigOrError;
import io.steelyard.balancer.WeightedPolicyProvider;
import io.steelyard.balancer.spi.PickerFactory;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.testkit.grpc.FakeHelper;
import io.steelyard.testkit.grpc.FakeHelper.FakeSubchannel;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * A policy written outside steelyard's packages, on the public base alone, as its Javadoc shows:
 * it gets the shared balancer (weights, drained endpoints, states) and the shared config fields.
 */
class WeightedPolicyProviderTest {

  private static final SocketAddress A = InetSocketAddress.createUnresolved("a", 1);
  private static final SocketAddress B = InetSocketAddress.createUnresolved("b", 2);

  /** Sends every call to the heaviest READY endpoint. */
  static final class HeaviestProvider extends WeightedPolicyProvider {
    HeaviestProvider() {
      super("heaviest", Set.of("tieBreak"));
    }

    @Override
    protected PickerFactory newPickerFactory() {
      return (children, weights) -> {
        int best = 0;
        for (int i = 1; i < weights.length; i++) {
          if (weights[i] > weights[best]) {
            best = i;
          }
        }
        return children[best];
      };
    }
  }

  private final HeaviestProvider provider = new HeaviestProvider();
  private final FakeHelper helper = new FakeHelper();

  @Test
  void aPolicyBuiltOnTheBaseGetsTheSharedBalancerWithItsWeights() {
    LoadBalancer lb = provider.newLoadBalancer(helper);
    Object config = provider.parseLoadBalancingPolicyConfig(Map.of()).getConfig();
    helper.syncContext().execute(
        () ->
            lb.acceptResolvedAddresses(
                ResolvedAddresses.newBuilder()
                    .setAddresses(
                        List.of(
                            EndpointWeights.withWeight(new EquivalentAddressGroup(A), 1),
                            EndpointWeights.withWeight(new EquivalentAddressGroup(B), 7)))
                    .setAttributes(Attributes.EMPTY)
                    .setLoadBalancingPolicyConfig(config)
                    .build()));
    for (FakeSubchannel sc : helper.liveSubchannels().values()) {
      helper.deliver(sc, READY);
    }

    SubchannelPicker picker = helper.lastPicker();
    PickResult pick = picker.pickSubchannel(null);

    assertThat(helper.lastState()).isEqualTo(READY);
    assertThat(pick.getSubchannel().getAddresses().getAddresses()).containsExactly(B);
    assertThat(provider.getPolicyName()).isEqualTo("heaviest");
    helper.syncContext().execute(lb::shutdown);
  }

  @Test
  void itsOwnFieldIsItsToReadAndTheSharedOnesAreParsed() {
    ConfigOrError parsed =
        provider.parseLoadBalancingPolicyConfig(
            Map.of("tieBreak", "first", "panicThresholdPercent", 30.0));

    assertThat(parsed.getError()).isNull();
    assertThat(parsed.getConfig())
        .isEqualTo(WeightedPolicyConfig.builder().panicThresholdPercent(30).build());
  }
}
