package io.steelyard.benchmarks;

import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.grpc.LoadBalancerRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.steelyard.balancer.BalancerMetrics;
import io.steelyard.balancer.spi.BalancerObserver;
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
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The pick cost with {@link BalancerMetrics} on and off, for every policy, the picker obtained
 * as a channel gets it (provider, health-checking wrapper, {@link BenchHelper}). With metrics
 * on, the channel's name-resolver arguments carry the observer exactly as {@code
 * BalancerMetrics.configure} sets it, and its gauges are registered in a registry. The observer
 * runs where the balancer builds pickers, never in a pick: this measures that claim.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class MetricsPickBenchmark {

  @Param({"10", "1000"})
  public int n;

  @Param({"weighted_random", "weighted_round_robin_static"})
  public String policy;

  @Param({"off", "on"})
  public String metrics;

  private SubchannelPicker subject;
  private BenchHelper helper;

  @Setup(Level.Trial)
  public void setUp() {
    int[] w = Weights.generate("skewed", n, 42);
    var provider = LoadBalancerRegistry.getDefaultRegistry().getProvider(policy);
    if (metrics.equals("on")) {
      BalancerMetrics m = BalancerMetrics.of(new SimpleMeterRegistry());
      helper = new BenchHelper(provider, BenchHelper.argsWith(BalancerObserver.KEY, m.balancerArgument()));
      subject = helper.readyPicker(w);
      if (m.backends("bench").size() != n) {
        throw new IllegalStateException("metrics on, but the observer saw "
            + m.backends("bench").size() + " backends, not " + n);
      }
    } else {
      helper = new BenchHelper(provider);
      subject = helper.readyPicker(w);
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    helper.shutdown();
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
