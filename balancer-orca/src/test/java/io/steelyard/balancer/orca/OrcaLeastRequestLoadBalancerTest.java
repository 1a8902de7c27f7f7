package io.steelyard.balancer.orca;

import static io.grpc.ConnectivityState.READY;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Attributes;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer;
import io.grpc.LoadBalancer.ResolvedAddresses;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.testkit.grpc.FakeHelper;
import io.steelyard.testkit.grpc.FakeHelper.FakeSubchannel;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The ORCA variant's balancer with a fake helper. (Out-of-band reporting needs a real channel per
 * subchannel; OrcaIntegrationTest switches it on against real servers.)
 */
class OrcaLeastRequestLoadBalancerTest {

  private static final SocketAddress A = InetSocketAddress.createUnresolved("a", 1);
  private static final SocketAddress B = InetSocketAddress.createUnresolved("b", 2);

  private final FakeHelper helper = new FakeHelper();
  private final LoadBalancer lb = new WeightedLeastRequestOrcaLoadBalancerProvider().newBalancer(helper);

  @AfterEach
  void shutdown() {
    helper.syncContext().execute(lb::shutdown);
  }

  private void resolve(Map<String, ?> rawConfig, int weightA, int weightB) {
    Object config =
        new WeightedLeastRequestOrcaLoadBalancerProvider()
            .parseLoadBalancingPolicyConfig(rawConfig)
            .getConfig();
    helper.syncContext().execute(
        () ->
            lb.acceptResolvedAddresses(
                ResolvedAddresses.newBuilder()
                    .setAddresses(
                        List.of(
                            EndpointWeights.withWeight(new EquivalentAddressGroup(A), weightA),
                            EndpointWeights.withWeight(new EquivalentAddressGroup(B), weightB)))
                    .setAttributes(Attributes.EMPTY)
                    .setLoadBalancingPolicyConfig(config)
                    .build()));
  }

  @Test
  void weightOnlyChangeCreatesNoSubchannel() {
    resolve(Map.of(), 1, 1);
    for (FakeSubchannel sc : helper.liveSubchannels().values()) {
      helper.deliver(sc, READY);
    }
    SubchannelPicker before = helper.lastPicker();

    resolve(Map.of(), 5, 1);

    assertThat(helper.createdSubchannels()).hasSize(2).noneMatch(FakeSubchannel::isShutdown);
    assertThat(helper.lastState()).isEqualTo(READY);
    assertThat(helper.lastPicker()).isNotEqualTo(before);
  }
}
