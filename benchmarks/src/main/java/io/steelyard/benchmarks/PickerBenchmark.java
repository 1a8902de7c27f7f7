package io.steelyard.benchmarks;

import io.grpc.LoadBalancer;
import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.grpc.LoadBalancerProvider;
import io.grpc.LoadBalancerRegistry;
import io.steelyard.balancer.internal.WeightedBalancers;
import io.steelyard.balancer.spi.PickerFactory;
import io.steelyard.balancer.spi.TracerDecorator;
import java.util.ServiceLoader;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
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
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Cost of one pick. Every policy's picker is obtained the way a channel gets it: from its
 * provider, driven by {@link BenchHelper} until every endpoint is READY.
 *
 * <p><b>Readiness</b> is read from connectivity state, never from picks: {@link
 * BenchHelper#readyPicker} moves every subchannel the balancer created to READY, requires the
 * balancer's last published state to be READY, and measures the picker published with it. No
 * pick is made before the measurement, so no policy can stall the setup: a check that picked
 * until every endpoint had been returned would never end for {@code weighted_least_request},
 * whose picks with no call outstanding go to the heaviest of the candidates, so the lightest
 * endpoints of a skewed set are rarely or never picked.
 *
 * <ul>
 *   <li>{@code round_robin}: {@code LoadBalancerRegistry.getProvider("round_robin")}; with
 *       grpc-services on the classpath (as here, and in any app that uses health checking) this
 *       is grpc-services' health-checking wrapper around grpc-util's round_robin.
 *   <li>{@code round_robin_util}: grpc-util's own round_robin provider, unwrapped.
 *   <li>{@code weighted_random}, {@code weighted_round_robin_static}: ours, from the registry
 *       (health-checking wrapper included).
 *   <li>{@code *_bare}: ours without the health-checking wrapper, to compare with
 *       {@code round_robin_util}.
 *   <li>{@code weighted_least_request(_bare)}: ours, the best of a few candidates by per-endpoint load; a pick only (no
 *       call is started, so every endpoint's count stays 0 and both candidates are compared).
 *   <li>{@code least_request_experimental}: grpc-xds's P2C least request, from the registry
 *       (health-checking wrapper included, as for round_robin): the same stream-tracer need.
 *   <li>{@code naive_*}: baselines in {@link NaivePickers}, over the same precomputed results.
 * </ul>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class PickerBenchmark {

  @Param({"10", "100", "1000", "10000"})
  public int n;

  @Param({"uniform", "skewed"})
  public String weights;

  @Param({
    "round_robin",
    "round_robin_util",
    "weighted_random",
    "weighted_round_robin_static",
    "weighted_random_bare",
    "weighted_round_robin_static_bare",
    "weighted_least_request",
    "weighted_least_request_bare",
    "least_request_experimental",
    "naive_rwlock_expanded_list",
    "naive_linear_scan",
    "naive_prefix_sum_binary_search"
  })
  public String picker;

  private SubchannelPicker subject;
  private BenchHelper helper;

  @Setup(Level.Trial)
  public void setUp() {
    int[] w = Weights.generate(weights, n, 42);
    switch (picker) {
      case "round_robin":
      case "weighted_random":
      case "weighted_round_robin_static":
      case "weighted_least_request":
      case "least_request_experimental":
        subject = viaProvider(LoadBalancerRegistry.getDefaultRegistry().getProvider(picker), w);
        break;
      case "round_robin_util":
        subject = viaProvider(utilRoundRobin(), w);
        break;
      case "weighted_random_bare":
        subject = viaProvider(bare("weighted_random", WeightedBalancers::weightedRandomPickers), w);
        break;
      case "weighted_round_robin_static_bare":
        subject = viaProvider(bare("weighted_round_robin_static", WeightedBalancers::smoothRoundRobinPickers), w);
        break;
      case "weighted_least_request_bare":
        subject = viaProvider(bare("weighted_least_request", () -> WeightedBalancers.leastRequestPickers(TracerDecorator.NONE)), w);
        break;
      default:
        subject = naive(picker, w);
    }
  }

  private SubchannelPicker viaProvider(LoadBalancerProvider provider, int[] w) {
    helper = new BenchHelper(provider);
    return helper.readyPicker(w);
  }

  /**
   * Our balancer without the health-checking wrapper (the counterpart of round_robin_util): the
   * same {@link WeightedBalancers#newBalancer} the provider wraps.
   */
  static LoadBalancerProvider bare(String policyName, Supplier<PickerFactory> pickers) {
    return new LoadBalancerProvider() {
      @Override
      public boolean isAvailable() {
        return true;
      }

      @Override
      public int getPriority() {
        return 0;
      }

      @Override
      public String getPolicyName() {
        return policyName;
      }

      @Override
      public LoadBalancer newLoadBalancer(LoadBalancer.Helper h) {
        return WeightedBalancers.newBalancer(h, policyName, pickers.get());
      }
    };
  }

  /** grpc-util's round_robin provider, found through the same service file the registry reads. */
  static LoadBalancerProvider utilRoundRobin() {
    for (LoadBalancerProvider p : ServiceLoader.load(LoadBalancerProvider.class)) {
      if (p.getPolicyName().equals("round_robin") && p.getClass().getName().startsWith("io.grpc.util.")) {
        return p;
      }
    }
    throw new IllegalStateException("grpc-util's round_robin provider not found");
  }

  private static SubchannelPicker naive(String name, int[] w) {
    // The results naive pickers return: the ones pick_first would give, one per endpoint.
    BenchHelper h = new BenchHelper(LoadBalancerRegistry.getDefaultRegistry().getProvider("round_robin"));
    h.readyPicker(new int[w.length]);
    PickResult[] results = new PickResult[w.length];
    for (int i = 0; i < w.length; i++) {
      results[i] = PickResult.withSubchannel(h.subchannels().get(i));
    }
    h.shutdown();
    switch (name) {
      case "naive_rwlock_expanded_list":
        return new NaivePickers.ExpandedListUnderLock(results, w);
      case "naive_linear_scan":
        return new NaivePickers.LinearScan(results, w);
      case "naive_prefix_sum_binary_search":
        return new NaivePickers.PrefixSumBinarySearch(results, w);
      default:
        throw new IllegalArgumentException("picker: " + name);
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    if (helper != null) {
      helper.shutdown();
    }
  }

  @Benchmark
  @Threads(1)
  public PickResult pick1Thread() {
    return subject.pickSubchannel(null);
  }

  @Benchmark
  @Threads(2)
  public PickResult pick2Threads() {
    return subject.pickSubchannel(null);
  }
}
