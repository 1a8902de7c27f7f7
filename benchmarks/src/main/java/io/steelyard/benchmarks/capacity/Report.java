package io.steelyard.benchmarks.capacity;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** The Markdown tables of a capacity benchmark run. */
final class Report {

  /** Allowance for noise in the p99 target: ratio 1.1 plus this many milliseconds. */
  static final double NOISE_MILLIS = 3;

  private Report() {}

  static String markdown(List<List<RunResult>> cells, CapacityBench.Settings settings) {
    StringBuilder out = new StringBuilder();
    List<List<RunResult>> steady = new ArrayList<>();
    for (List<RunResult> cell : cells) {
      switch (cell.get(0).scenario.table()) {
        case STEADY -> steady.add(cell);
        case JOIN -> EventTables.join(cell, out);
        case FAILING -> EventTables.failing(cell, out);
      }
    }
    if (!steady.isEmpty()) {
      steadyTables(steady, out);
    }
    return out.toString();
  }

  private static void steadyTables(List<List<RunResult>> cells, StringBuilder out) {
    String currentScenario = null;
    for (List<RunResult> cell : cells) {
      RunResult first = cell.get(0);
      if (!first.scenario.id().equals(currentScenario)) {
        currentScenario = first.scenario.id();
        out.append("\n#### (").append(currentScenario).append(") ").append(first.scenario.title())
            .append("\n\n");
        boolean event = first.scenario.event() != null;
        out.append("| mix | policy | p50 ms | p99 ms | max ms | failed | p99 ms, 2nd half | failed, 2nd half | share % (whole) | share % (2nd half) |")
            .append(event ? " largest sheds half, ms |" : "").append('\n');
        out.append("|---|---|---:|---:|---:|---:|---:|---:|---|---|").append(event ? "---:|" : "")
            .append('\n');
      }
      for (RunResult run : cell) {
        RunResult.Summary whole = run.whole();
        RunResult.Summary second = run.secondHalf();
        out.append(String.format(Locale.ROOT, "| %s | %s | %.1f | %.1f | %.1f | %d | %.1f | %d | %s | %s |",
            run.mix.describe(), run.policy.label(), whole.p50Millis(), whole.p99Millis(),
            whole.maxMillis(), whole.failures(), second.p99Millis(), second.failures(),
            CapacityBench.formatShares(whole.shares()), CapacityBench.formatShares(second.shares())));
        if (run.scenario.event() != null) {
          double shed = run.shedMillis();
          out.append(shed < 0 ? " never |" : String.format(Locale.ROOT, " %.0f |", shed));
        }
        out.append('\n');
      }
    }

    out.append("\n#### Targets: ").append(CapacityBench.SUBJECT)
        .append(" against the best of the other policies (ours' variants excluded)\n\n");
    out.append("| scenario | mix | WLR p99 ms | best other p99 ms (policy) | ratio | p99 target met (≤ 1.1× + ")
        .append((int) NOISE_MILLIS).append(" ms) | WLR failed | fewest other failed (policy) | failures target met |\n");
    out.append("|---|---|---:|---|---:|---|---:|---|---|\n");
    for (List<RunResult> cell : cells) {
      RunResult subject = null;
      RunResult bestP99 = null;
      RunResult fewest = null;
      for (RunResult run : cell) {
        String label = run.policy.label();
        if (label.equals(CapacityBench.SUBJECT)) {
          subject = run;
        } else if (!label.startsWith(CapacityBench.SUBJECT)) {
          if (bestP99 == null || run.whole().p99Millis() < bestP99.whole().p99Millis()) {
            bestP99 = run;
          }
          if (fewest == null || run.whole().failures() < fewest.whole().failures()) {
            fewest = run;
          }
        }
      }
      if (subject == null || bestP99 == null) {
        continue;
      }
      double p99 = subject.whole().p99Millis();
      double best = bestP99.whole().p99Millis();
      int failed = subject.whole().failures();
      int fewestFailed = fewest.whole().failures();
      out.append(String.format(Locale.ROOT, "| (%s) | %s | %.1f | %.1f (%s) | %.2f | %s | %d | %d (%s) | %s |\n",
          subject.scenario.id(), subject.mix.name(), p99, best, bestP99.policy.label(), p99 / best,
          p99 <= 1.1 * best + NOISE_MILLIS ? "yes" : "**no**", failed, fewestFailed,
          fewest.policy.label(), failed <= fewestFailed ? "yes" : "**no**"));
    }

    out.append("\n#### Latency term: ").append(CapacityBench.SUBJECT).append(" with and without peak EWMA\n\n");
    out.append("| scenario | mix | p99 ms without | p99 ms with | failed without | failed with |\n");
    out.append("|---|---|---:|---:|---:|---:|\n");
    for (List<RunResult> cell : cells) {
      RunResult without = find(cell, CapacityBench.SUBJECT);
      RunResult with = find(cell, CapacityBench.SUBJECT + " +latency");
      if (without != null && with != null) {
        out.append(String.format(Locale.ROOT, "| (%s) | %s | %.1f | %.1f | %d | %d |\n",
            without.scenario.id(), without.mix.name(), without.whole().p99Millis(),
            with.whole().p99Millis(), without.whole().failures(), with.whole().failures()));
      }
    }
  }

  private static RunResult find(List<RunResult> cell, String label) {
    for (RunResult run : cell) {
      if (run.policy.label().equals(label)) {
        return run;
      }
    }
    return null;
  }
}
