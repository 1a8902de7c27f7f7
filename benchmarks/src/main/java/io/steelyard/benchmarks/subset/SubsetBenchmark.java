package io.steelyard.benchmarks.subset;

import io.steelyard.balancer.spi.RendezvousSubset;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What choosing a subset costs a client on every resolution: {@link RendezvousSubset#choose} over
 * n endpoint names, subset 20 (one hash per endpoint and a heap of 20).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class SubsetBenchmark {

  @Param({"1000", "10000"})
  public int n;

  private List<String> names;
  private RendezvousSubset subset;

  @Setup
  public void setUp() {
    names = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      names.add("10." + (i >> 16 & 255) + "." + (i >> 8 & 255) + "." + (i & 255) + ":50051");
    }
    subset = RendezvousSubset.of("client-42.pod.cluster.local", 20);
  }

  @Benchmark
  public Set<String> choose() {
    return subset.choose(names, Function.identity());
  }
}
