package io.steelyard.balancer.internal;

import static io.grpc.ConnectivityState.READY;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Attributes;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer;
import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.ResolvedAddresses;
import io.grpc.LoadBalancerProvider;
import io.grpc.NameResolver.ConfigOrError;
import io.steelyard.balancer.EndpointWeights;
import io.steelyard.balancer.WeightedRandomLoadBalancerProvider;
import io.steelyard.balancer.WeightedRoundRobinStaticLoadBalancerProvider;
import io.steelyard.balancer.internal.FakeHelper.FakeSubchannel;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The public providers as a channel uses them: health-checking wrapper included. */
class ProvidersTest {

  private static LoadBalancerProvider provider(String name) {
    return name.equals(WeightedRandomLoadBalancerProvider.POLICY_NAME)
        ? new WeightedRandomLoadBalancerProvider()
        : new WeightedRoundRobinStaticLoadBalancerProvider();
  }

  @ParameterizedTest
  @ValueSource(strings = {"weighted_random", "weighted_round_robin_static"})
  void emptyConfigIsAccepted(String name) {
    ConfigOrError parsed = provider(name).parseLoadBalancingPolicyConfig(Map.of());

    assertThat(parsed.getError()).isNull();
  }

  @ParameterizedTest
  @ValueSource(strings = {"weighted_random", "weighted_round_robin_static"})
  void picksThroughTheHealthWrapperReturnOneStoredResultWithTheChannelsSubchannel(String name) {
    FakeHelper helper = new FakeHelper();
    LoadBalancer lb = provider(name).newLoadBalancer(helper);
    helper.syncContext.execute(
        () ->
            lb.acceptResolvedAddresses(
                ResolvedAddresses.newBuilder()
                    .setAddresses(
                        List.of(
                            EndpointWeights.withWeight(
                                new EquivalentAddressGroup(
                                    InetSocketAddress.createUnresolved("a", 1)),
                                3)))
                    .setAttributes(Attributes.EMPTY)
                    .build()));
    FakeSubchannel subchannel = helper.createdSubchannels.get(0);
    helper.deliver(subchannel, READY);

    PickResult first = helper.lastPicker().pickSubchannel(null);
    PickResult second = helper.lastPicker().pickSubchannel(null);

    assertThat(helper.lastState()).isEqualTo(READY);
    assertThat(first.getSubchannel()).isSameAs(subchannel);
    assertThat(second).isSameAs(first);
    helper.syncContext.execute(lb::shutdown);
  }
}
