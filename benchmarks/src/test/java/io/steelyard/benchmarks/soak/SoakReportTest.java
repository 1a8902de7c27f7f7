package io.steelyard.benchmarks.soak;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The flatness verdicts of a 30-minute soak: one-sided, on the threads outside grpc's pool. */
class SoakReportTest {

  private static final SoakBench.Settings THIRTY_MINUTES = SoakBench.Settings.defaults(1800, Path.of("target"));

  /** Samples every 10 s whose figures are {@code early} up to 12 min and {@code late} from 20 min on. */
  private static List<SoakReport.Sample> samples(long earlyHeap, long lateHeap, int earlyThreads, int lateThreads,
      int earlyPooled, int latePooled, long earlyFds, long lateFds) {
    List<SoakReport.Sample> samples = new ArrayList<>();
    for (int t = 0; t <= 1800; t += 10) {
      boolean late = t >= 1200;
      long heap = late ? lateHeap : earlyHeap;
      int threads = late ? lateThreads : earlyThreads;
      int pooled = late ? latePooled : earlyPooled;
      long fds = late ? lateFds : earlyFds;
      samples.add(new SoakReport.Sample(t, "1.0", heap, threads, fds, pooled, heap, threads, fds, pooled, 210,
          450_000, 3, t * 500L, 0, 200, t, t, t * 20L, 0, 0, 1_000_000, 0));
    }
    return samples;
  }

  private static List<String> flatnessMissed(List<SoakReport.Sample> samples) {
    SoakReport report = new SoakReport(THIRTY_MINUTES, 0, "1.0", "1.0", samples, List.of(), 0,
        List.of("CALLS 900000 0 0"), List.of(), Map.of(), List.of());
    return report.missed().stream().filter(m -> m.contains(" flat ")).toList();
  }

  @Test
  void fallingCountsAreNoLeak() {
    // the grpc pool shrinks with the load: total threads -30 %, heap and fds a little lower
    assertThat(flatnessMissed(samples(24_000_000, 22_000_000, 47, 33, 21, 7, 631, 600))).isEmpty();
  }

  @Test
  void aGrowingPoolAloneIsNoLeak() {
    assertThat(flatnessMissed(samples(24_000_000, 24_000_000, 40, 60, 14, 34, 631, 631))).isEmpty();
  }

  @Test
  void growthOfTheThreadsOutsideThePoolIsMissed() {
    assertThat(flatnessMissed(samples(24_000_000, 24_000_000, 40, 44, 14, 14, 631, 631)))
        .hasSize(2)
        .allMatch(m -> m.contains("threads outside grpc's executor pool flat") && m.contains("+15.4 %"));
  }

  @Test
  void growingHeapOrFdsAreMissed() {
    assertThat(flatnessMissed(samples(24_000_000, 26_000_000, 40, 40, 14, 14, 631, 700)))
        .hasSize(4)
        .anyMatch(m -> m.startsWith("agent JVM heap after GC flat") && m.contains("(+8.3 %)"))
        .anyMatch(m -> m.startsWith("callers JVM open file descriptors flat") && m.contains("(+10.9 %)"));
  }
}
