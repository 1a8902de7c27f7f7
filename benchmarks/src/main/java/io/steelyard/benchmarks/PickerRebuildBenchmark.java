package io.steelyard.benchmarks;

import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.grpc.LoadBalancerRegistry;
import io.steelyard.balancer.internal.WeightedBalancers;
import io.steelyard.balancer.spi.PickerFactory;
import io.steelyard.balancer.spi.TracerDecorator;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.util.List;
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
 * What a weight change costs at n = 10,000 READY endpoints.
 *
 * <ul>
 *   <li>{@code buildPicker}: the policy's factory building the READY picker alone (alias table,
 *       schedule, and for {@code weighted_least_request} finding each endpoint's load), given
 *       the balancer's child keys, as the balancer calls it after the first build.
 *   <li>{@code weightOnlyUpdate}: the whole resolver update through the balancer (per-child
 *       address update of 10,000 pick_first children + picker build + publish), alternating
 *       between two weight vectors so every update really changes the picker.
 * </ul>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class PickerRebuildBenchmark {

  @Param({"10000"})
  public int n;

  @Param({"uniform", "skewed"})
  public String weights;

  @Param({"weighted_random", "weighted_round_robin_static", "weighted_least_request"})
  public String policy;

  private BenchHelper helper;
  private List<EquivalentAddressGroup> endpointsA;
  private List<EquivalentAddressGroup> endpointsB;
  private SubchannelPicker[] childPickers;
  private Object[] keys;
  private int[] weightsA;
  private PickerFactory pickerFactory;
  private boolean flip;

  @Setup(Level.Trial)
  public void setUp() {
    weightsA = Weights.generate(weights, n, 42);
    int[] weightsB = Weights.generate(weights, n, 43);
    endpointsA = BenchHelper.endpoints(weightsA);
    endpointsB = BenchHelper.endpoints(weightsB);
    helper = new BenchHelper(LoadBalancerRegistry.getDefaultRegistry().getProvider(policy));
    helper.readyPicker(weightsA);
    // The factory a balancer of this policy builds its pickers with.
    pickerFactory = factory(policy);
    childPickers = new SubchannelPicker[n];
    keys = new Object[n];
    BenchHelper rr = new BenchHelper(PickerBenchmark.utilRoundRobin());
    rr.readyPicker(new int[n]);
    for (int i = 0; i < n; i++) {
      childPickers[i] =
          new io.grpc.LoadBalancer.FixedResultPicker(
              io.grpc.LoadBalancer.PickResult.withSubchannel(rr.subchannels().get(i)));
      // The balancer's child key for the endpoint, as it hands keys to the factory.
      keys[i] = WeightedBalancers.endpointKey(endpointsA.get(i));
    }
    rr.shutdown();
    // The balancer's first build over these endpoints: each later one finds their state there.
    pickerFactory.newPicker(keys, childPickers, weightsA, WeightedPolicyConfig.DEFAULT);
  }

  /** The factory a balancer of {@code policy} builds its pickers with. */
  static PickerFactory factory(String policy) {
    switch (policy) {
      case "weighted_random":
        return WeightedBalancers.weightedRandomPickers();
      case "weighted_round_robin_static":
        return WeightedBalancers.smoothRoundRobinPickers();
      case "weighted_least_request":
        return WeightedBalancers.leastRequestPickers(TracerDecorator.NONE);
      default:
        throw new IllegalArgumentException("policy: " + policy);
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    helper.shutdown();
  }

  @Benchmark
  public SubchannelPicker buildPicker() {
    return pickerFactory.newPicker(keys, childPickers, weightsA, WeightedPolicyConfig.DEFAULT);
  }

  @Benchmark
  public SubchannelPicker weightOnlyUpdate() {
    flip = !flip;
    helper.resolve(flip ? endpointsB : endpointsA);
    // Each update publishes a picker of a few 100 KiB: keeping them all would skew GC. Clearing
    // a 2-element list costs nothing next to the update's milliseconds.
    helper.forgetHistory();
    return helper.picker();
  }
}
