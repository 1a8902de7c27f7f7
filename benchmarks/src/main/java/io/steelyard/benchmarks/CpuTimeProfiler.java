package io.steelyard.benchmarks;

import java.lang.management.ManagementFactory;
import java.util.Collection;
import java.util.List;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.AggregationPolicy;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ScalarResult;

/**
 * A JMH profiler reporting {@code cpu.time.norm}: the benchmark JVM's CPU time per operation,
 * summed over its threads. On a shared machine wall time per operation also counts the time the
 * benchmark threads wait for a CPU; CPU time does not, so single-thread figures stay comparable
 * when other builds run. It also counts JIT and GC threads, which are near idle after warm-up in
 * allocation-free benchmarks. It cannot replace wall time for contention: two threads contend
 * only while both run, which a loaded machine makes rare.
 *
 * <pre>{@code
 * java -jar benchmarks/target/benchmarks.jar PickerBenchmark.pick1Thread \
 *     -prof io.steelyard.benchmarks.CpuTimeProfiler
 * }</pre>
 */
public final class CpuTimeProfiler implements InternalProfiler {

  private final com.sun.management.OperatingSystemMXBean os =
      (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
  private long startNanos;

  @Override
  public String getDescription() {
    return "CPU time of the benchmark JVM per operation (steadier than wall time when shared)";
  }

  @Override
  public void beforeIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams) {
    startNanos = os.getProcessCpuTime();
  }

  @Override
  public Collection<? extends Result> afterIteration(
      BenchmarkParams benchmarkParams, IterationParams iterationParams, IterationResult result) {
    long cpuNanos = os.getProcessCpuTime() - startNanos;
    // All operations of the iteration, including those run while threads synchronise at its
    // start and end: the CPU time covers those too.
    long ops = result.getMetadata().getAllOps();
    return List.of(
        new ScalarResult(
            "cpu.time.norm", ops == 0 ? Double.NaN : cpuNanos / (double) ops, "ns/op",
            AggregationPolicy.AVG));
  }
}
