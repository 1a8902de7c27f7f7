package io.steelyard.benchmarks.clientsubset;

import io.steelyard.balancer.spi.ClientSubset;
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
 * What choosing its client subset costs a client on every resolution: {@link ClientSubset#choose}
 * over n endpoint names, {@code subsetSize} 20 (one hash per endpoint and a heap of 20).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class ClientSubsetBenchmark {

  @Param({"1000", "10000"})
  public int n;

  private List<String> names;
  private ClientSubset clientSubset;

  @Setup
  public void setUp() {
    names = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      names.add("10." + (i >> 16 & 255) + "." + (i >> 8 & 255) + "." + (i & 255) + ":50051");
    }
    clientSubset = ClientSubset.of("client-42.pod.cluster.local", 20);
  }

  @Benchmark
  public Set<String> choose() {
    return clientSubset.choose(names, Function.identity());
  }
}
