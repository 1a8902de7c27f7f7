package io.steelyard.balancer.internal;

import static io.grpc.ConnectivityState.CONNECTING;
import static io.grpc.ConnectivityState.READY;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Attributes;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer.ResolvedAddresses;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.grpc.NameResolver;
import io.grpc.SynchronizationContext;
import io.steelyard.balancer.spi.BalancerObserver;
import io.steelyard.balancer.spi.EndpointState;
import io.steelyard.balancer.spi.PickerFactory;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.testkit.grpc.FakeHelper;
import io.steelyard.testkit.grpc.FakeHelper.FakeSubchannel;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * The metrics observer runs where the balancer builds its picker, never in a pick: with one, a
 * channel publishes a picker of the same class that picks the same sequence, and picking tells
 * the observer nothing. (What this costs in ns is MetricsPickBenchmark's job; this is the
 * deterministic half of the claim.)
 */
class ObservedPickPathTest {

  /** Counts updates; a pick must never add one. */
  private static final class CountingObserver implements BalancerObserver {
    int updates;
    List<EndpointState> last = List.of();

    @Override
    public void update(List<EndpointState> endpoints) {
      updates++;
      last = endpoints;
    }

    @Override
    public void close() {}
  }

  private static NameResolver.Args argsWith(BalancerObserver observer) {
    return NameResolver.Args.newBuilder()
        .setDefaultPort(443)
        .setProxyDetector(address -> null)
        .setSynchronizationContext(new SynchronizationContext((t, e) -> {
          throw new AssertionError(e);
        }))
        .setServiceConfigParser(new NameResolver.ServiceConfigParser() {
          @Override
          public NameResolver.ConfigOrError parseServiceConfig(Map<String, ?> raw) {
            return NameResolver.ConfigOrError.fromConfig(raw);
          }
        })
        .setArg(BalancerObserver.KEY, service -> observer)
        .build();
  }

  /** A balancer over endpoints with weights 1, 2 and 5, all READY; returns its picker. */
  private static SubchannelPicker readyPicker(FakeHelper helper, Supplier<PickerFactory> factory) {
    WeightedLoadBalancer lb = new WeightedLoadBalancer(helper, "policy", factory.get());
    List<EquivalentAddressGroup> eags = new ArrayList<>();
    int[] weights = {1, 2, 5};
    for (int i = 0; i < weights.length; i++) {
      eags.add(EndpointWeights.withWeight(
          new EquivalentAddressGroup(InetSocketAddress.createUnresolved("10.0.0." + i, 443)),
          weights[i]));
    }
    helper.syncContext().execute(() -> lb.acceptResolvedAddresses(
        ResolvedAddresses.newBuilder().setAddresses(eags).setAttributes(Attributes.EMPTY).build()));
    for (FakeSubchannel sc : helper.liveSubchannels().values()) {
      helper.deliver(sc, CONNECTING);
      helper.deliver(sc, READY);
    }
    assertThat(helper.lastState()).isEqualTo(READY);
    return helper.lastPicker();
  }

  private static List<String> picks(SubchannelPicker picker, int count) {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      out.add(picker.pickSubchannel(null).getSubchannel().getAddresses().toString());
    }
    return out;
  }

  private static void assertSamePickPath(Supplier<PickerFactory> factory) {
    SubchannelPicker plain = readyPicker(new FakeHelper(), factory);
    CountingObserver observer = new CountingObserver();
    SubchannelPicker observed = readyPicker(new FakeHelper(argsWith(observer)), factory);
    int updatesBeforePicks = observer.updates;

    assertThat(observed.getClass()).isEqualTo(plain.getClass());
    assertThat(picks(observed, 1_000)).isEqualTo(picks(plain, 1_000));
    assertThat(observer.updates).as("updates during picks").isEqualTo(updatesBeforePicks);
    assertThat(observer.last).extracting(EndpointState::effectiveWeight).containsExactly(1, 2, 5);
  }

  @Test
  void roundRobinPicksTheSameSequenceWithAnObserverAndPicksNeverReachIt() {
    // One stripe at position 0: the same sequence from any thread.
    assertSamePickPath(
        () -> SmoothRoundRobinPicker.newFactory(new StripedPositions(new int[] {0})));
  }

  @Test
  void randomPicksTheSameSequenceWithAnObserverAndPicksNeverReachIt() {
    assertSamePickPath(() -> WeightedRandomPicker.newFactory(new Random(7)));
  }
}
