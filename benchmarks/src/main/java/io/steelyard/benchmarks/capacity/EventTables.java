package io.steelyard.benchmarks.capacity;

import java.util.List;
import java.util.Locale;

/**
 * The Markdown tables of the event scenarios, which look at the seconds after the event rather
 * than the whole run: (e) a cold server joins ({@link Scenario.Table#JOIN}), (f) and (g) servers
 * fail every call ({@link Scenario.Table#FAILING}).
 */
final class EventTables {

  private EventTables() {}

  /** Per policy: the whole run, the warm-up after the join, and the joiner's share second by second. */
  static void join(List<RunResult> cell, StringBuilder out) {
    RunResult first = cell.get(0);
    long afterNanos = Scenario.COLD_LENGTH.toNanos();
    int seconds = seconds(first);
    heading(first, out);
    out.append("| policy | p99 ms | p999 ms | failed | p99 ms, ")
        .append(Scenario.COLD_LENGTH.toSeconds()).append(" s after the join | p999 ms, same | failed, same |");
    for (int k = 0; k < seconds; k++) {
      out.append(" joiner % ").append(k).append('–').append(k + 1).append(" s |");
    }
    out.append("\n|---|---:|---:|---:|---:|---:|---:|").append("---:|".repeat(seconds)).append('\n');
    for (RunResult run : cell) {
      RunResult.Summary whole = run.whole();
      RunResult.Summary after = run.afterEvent(afterNanos);
      out.append(String.format(Locale.ROOT, "| %s | %.1f | %.1f | %d | %.1f | %.1f | %d |",
          run.policy.label(), whole.p99Millis(), whole.p999Millis(), whole.failures(),
          after.p99Millis(), after.p999Millis(), after.failures()));
      for (int k = 0; k < seconds; k++) {
        out.append(String.format(Locale.ROOT, " %.0f |", 100 * secondShare(run, k)));
      }
      out.append('\n');
    }
    loadAverage(cell, out);
  }

  /** Per policy: failures and latency from the event on, and where the failing servers' calls went. */
  static void failing(List<RunResult> cell, StringBuilder out) {
    RunResult first = cell.get(0);
    int seconds = Math.min(seconds(first), 6);
    heading(first, out);
    out.append("| policy | p99 ms | p999 ms | failed | p99 ms, from the event | p999 ms, same | failed, same |"
        + " failing servers' % before |");
    for (int k = 0; k < seconds; k++) {
      out.append(" % ").append(k).append('–').append(k + 1).append(" s |");
    }
    out.append(" out (< 5 %) after, ms | back (≥ half) after, ms |\n");
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|").append("---:|".repeat(seconds))
        .append("---:|---:|\n");
    for (RunResult run : cell) {
      RunResult.Summary whole = run.whole();
      RunResult.Summary after = run.afterEvent();
      out.append(String.format(Locale.ROOT, "| %s | %.1f | %.1f | %d | %.1f | %.1f | %d | %.0f |",
          run.policy.label(), whole.p99Millis(), whole.p999Millis(), whole.failures(),
          after.p99Millis(), after.p999Millis(), after.failures(),
          100 * run.affectedShare(0, run.eventBucket())));
      for (int k = 0; k < seconds; k++) {
        out.append(String.format(Locale.ROOT, " %.0f |", 100 * secondShare(run, k)));
      }
      double outMillis = run.outMillis();
      double back = run.backMillis();
      out.append(outMillis < 0 ? " never |" : String.format(Locale.ROOT, " %.0f |", outMillis));
      out.append(Double.isNaN(back) ? " – |"
          : back < 0 ? " never |" : String.format(Locale.ROOT, " %.0f |", back));
      out.append('\n');
    }
    loadAverage(cell, out);
  }

  private static void heading(RunResult first, StringBuilder out) {
    out.append("\n#### (").append(first.scenario.id()).append(") ").append(first.scenario.title())
        .append(" — mix ").append(first.mix.describe()).append("\n\n");
  }

  /** Whole seconds from the event to the end of the measured period. */
  private static int seconds(RunResult run) {
    return (int) ((run.measuredNanos - run.eventAtNanos) / 1_000_000_000L);
  }

  /** The affected servers' share of the calls in second {@code k} after the event. */
  private static double secondShare(RunResult run, int k) {
    int perSecond = (int) (1_000_000_000L / run.bucketNanos);
    int from = run.eventBucket() + k * perSecond;
    return run.affectedShare(from, from + perSecond);
  }

  private static void loadAverage(List<RunResult> cell, StringBuilder out) {
    double min = Double.MAX_VALUE;
    double max = 0;
    for (RunResult run : cell) {
      min = Math.min(min, run.loadAverage);
      max = Math.max(max, run.loadAverage);
    }
    out.append(String.format(Locale.ROOT,
        "\nLoad average (1 min) at the end of each run: %.1f–%.1f on %d CPUs.\n",
        min, max, Runtime.getRuntime().availableProcessors()));
  }
}
