package io.steelyard.balancer.internal;

import static io.grpc.ConnectivityState.READY;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Attributes;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer;
import io.grpc.LoadBalancerProvider;
import io.steelyard.balancer.WeightedRandomLoadBalancerProvider;
import io.steelyard.balancer.WeightedRoundRobinStaticLoadBalancerProvider;
import io.grpc.LoadBalancer.CreateSubchannelArgs;
import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.ResolvedAddresses;
import io.grpc.LoadBalancer.Subchannel;
import io.grpc.Status;
import io.grpc.protobuf.services.HealthCheckingLoadBalancerUtil;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.testkit.grpc.FakeHelper;
import io.steelyard.testkit.grpc.FakeHelper.FakeSubchannel;
import java.net.InetSocketAddress;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link PickerSlot} reaches into grpc-services' private health-checking classes to save an
 * allocation per pick. These tests fail the day a grpc upgrade makes that silently fall back to
 * the wrapper's per-pick copy, or makes it unnecessary.
 */
class HealthWrapperUnwrappingTest {

  private static final EquivalentAddressGroup ENDPOINT =
      EndpointWeights.withWeight(
          new EquivalentAddressGroup(InetSocketAddress.createUnresolved("a", 1)), 3);

  @Test
  void reflectiveLookupFindsTheHealthCheckingSubchannelClass() {
    assertThat(PickerSlot.unwrapsHealthCheckingSubchannels())
        .as("grpc-services' HealthCheckingLoadBalancerFactory$SubchannelImpl and"
            + " ForwardingSubchannel.delegate() were found")
        .isTrue();
  }

  /** If this fails, grpc-services no longer wraps subchannels: delete the unwrapping. */
  @Test
  void theWrapperStillHandsBalancersItsOwnSubchannelClass() {
    FakeHelper helper = new FakeHelper();
    Subchannel[] seen = new Subchannel[1];
    LoadBalancer.Factory recording =
        new LoadBalancer.Factory() {
          @Override
          public LoadBalancer newLoadBalancer(LoadBalancer.Helper h) {
            return new LoadBalancer() {
              @Override
              public Status acceptResolvedAddresses(ResolvedAddresses addresses) {
                seen[0] =
                    h.createSubchannel(
                        CreateSubchannelArgs.newBuilder()
                            .setAddresses(addresses.getAddresses())
                            .build());
                return Status.OK;
              }

              @Override
              public void handleNameResolutionError(Status error) {}

              @Override
              public void shutdown() {}
            };
          }
        };
    LoadBalancer lb = HealthCheckingLoadBalancerUtil.newHealthCheckingLoadBalancer(recording, helper);

    helper.syncContext().execute(() -> lb.acceptResolvedAddresses(resolution()));

    assertThat(seen[0].getClass().getName()).isEqualTo(PickerSlot.HEALTH_SUBCHANNEL_CLASS);
    helper.syncContext().execute(lb::shutdown);
  }

  /**
   * Through the wrapper a channel installs: every pick returns the one stored result, already
   * carrying the channel's own subchannel. Without the unwrapping the wrapper would copy the result
   * on each pick (a new instance every time), which is what {@code round_robin} pays.
   */
  @ParameterizedTest
  @ValueSource(strings = {"weighted_random", "weighted_round_robin_static"})
  void picksThroughTheHealthWrapperReturnOneStoredResultWithTheChannelsSubchannel(String name) {
    LoadBalancerProvider policy =
        name.equals("weighted_random")
            ? new WeightedRandomLoadBalancerProvider()
            : new WeightedRoundRobinStaticLoadBalancerProvider();
    FakeHelper helper = new FakeHelper();
    LoadBalancer lb = policy.newLoadBalancer(helper);
    helper.syncContext().execute(() -> lb.acceptResolvedAddresses(resolution()));
    FakeSubchannel subchannel = helper.createdSubchannels().get(0);
    helper.deliver(subchannel, READY);

    PickResult first = helper.lastPicker().pickSubchannel(null);
    PickResult second = helper.lastPicker().pickSubchannel(null);

    assertThat(helper.lastState()).isEqualTo(READY);
    assertThat(first.getSubchannel()).isSameAs(subchannel);
    assertThat(second).isSameAs(first);
    helper.syncContext().execute(lb::shutdown);
  }

  private static ResolvedAddresses resolution() {
    return ResolvedAddresses.newBuilder()
        .setAddresses(List.of(ENDPOINT))
        .setAttributes(Attributes.EMPTY)
        .build();
  }
}
