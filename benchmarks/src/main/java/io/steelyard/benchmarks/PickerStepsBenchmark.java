package io.steelyard.benchmarks;

import io.grpc.ConnectivityState;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.grpc.LoadBalancerRegistry;
import io.steelyard.balancer.spi.EndpointSelection;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import io.steelyard.balancer.spi.ZoneRoutingConfig;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.registry.Localities;
import io.steelyard.testkit.grpc.FakeHelper.FakeSubchannel;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What the steps before the policy's pick cost, per pick and per picker build: the zone step
 * (the caller in zone {@code a} of three equal zones), metadata selection (a {@code subset} of
 * half the endpoints), a traffic {@code split} 90/10 between two versions, and the split with
 * the zone step inside each version; {@code none} is the policy alone, as in {@link
 * PickerBenchmark}.
 *
 * <ul>
 *   <li>{@code pick}: one pick from the READY picker, 1 thread.
 *   <li>{@code rebuild}: one endpoint's connection drops and comes back (IDLE, then READY), the
 *       balancer's two picker builds for it through every configured step, with the whole
 *       balancer's own work (its children's states, eligibility, the published-state check)
 *       that {@code none} measures alone.
 * </ul>
 *
 * <p>Endpoints {@code i} are in zone {@code a}, {@code b}, {@code c} by {@code i mod 3} and of
 * version {@code v1} or {@code v2} by {@code i mod 2}; weights uniform 1..10 from the benchmarks'
 * fixed seed.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class PickerStepsBenchmark {

  @Param({"1000", "10000"})
  public int n;

  @Param({"weighted_random", "weighted_round_robin_static", "weighted_least_request"})
  public String policy;

  @Param({"none", "zone", "selection", "split", "split_zone"})
  public String steps;

  private BenchHelper helper;
  private SubchannelPicker picker;
  private FakeSubchannel toggled;

  @Setup(Level.Trial)
  public void setUp() {
    int[] weights = Weights.generate("uniform", n, 42);
    List<EquivalentAddressGroup> endpoints = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      InetSocketAddress address =
          InetSocketAddress.createUnresolved(
              "10." + (i >> 16 & 255) + "." + (i >> 8 & 255) + "." + (i & 255), 443);
      endpoints.add(
          EndpointWeights.withWeight(
              new EquivalentAddressGroup(address),
              weights[i],
              Map.of(Localities.ZONE_KEY, "abc".substring(i % 3, i % 3 + 1),
                  "version", i % 2 == 0 ? "v1" : "v2")));
    }
    helper = new BenchHelper(LoadBalancerRegistry.getDefaultRegistry().getProvider(policy));
    picker = helper.readyPicker(endpoints, config(steps));
    toggled = helper.subchannels().get(n / 2);
  }

  static WeightedPolicyConfig config(String steps) {
    WeightedPolicyConfig.Builder config = WeightedPolicyConfig.builder();
    Map<String, String> v1 = Map.of("version", "v1");
    Map<String, String> v2 = Map.of("version", "v2");
    switch (steps) {
      case "none":
        break;
      case "zone":
        config.zoneRouting(ZoneRoutingConfig.builder().zone("a").build());
        break;
      case "selection":
        config.endpointSelection(EndpointSelection.select(List.of(v2), true));
        break;
      case "split":
        config.endpointSelection(EndpointSelection.split(List.of(v1, v2), new int[] {9000, 1000}));
        break;
      case "split_zone":
        config.endpointSelection(EndpointSelection.split(List.of(v1, v2), new int[] {9000, 1000}));
        config.zoneRouting(ZoneRoutingConfig.builder().zone("a").build());
        break;
      default:
        throw new IllegalArgumentException("steps: " + steps);
    }
    return config.build();
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    helper.shutdown();
  }

  @Benchmark
  public PickResult pick() {
    return picker.pickSubchannel(null);
  }

  @Benchmark
  @OutputTimeUnit(TimeUnit.MICROSECONDS)
  public SubchannelPicker rebuild() {
    helper.deliver(toggled, ConnectivityState.IDLE);
    helper.deliver(toggled, ConnectivityState.READY);
    helper.runTimers();
    helper.forgetHistory();
    return helper.picker();
  }
}
