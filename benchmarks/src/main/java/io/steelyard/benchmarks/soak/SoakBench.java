package io.steelyard.benchmarks.soak;

import static io.steelyard.benchmarks.BenchArgs.intArg;
import static io.steelyard.benchmarks.BenchArgs.stringArg;

import java.nio.file.Path;
import java.util.Locale;

/**
 * The soak: a 3-member etcd, 200 servers with churn and weight changes in one JVM ({@link
 * SoakAgent}), 20 channels calling them through the etcd resolver and {@code
 * weighted_least_request} in another ({@link SoakCallers}), an etcd member restarted every 5
 * minutes and the leader frozen once, for {@code --minutes}. Every 10 s it samples both JVMs
 * (heap after a full GC, live threads, open file descriptors) and etcd (watch streams, db size);
 * at the end it checks that nothing was lost ({@link SoakReport}) and writes {@code samples.csv},
 * {@code failures.csv}, {@code summary.md} and {@code soak.png} into {@code --out}. Exit status 1
 * when a target is missed, 2 for bad arguments.
 *
 * <pre>{@code
 * scripts/bench-soak --minutes 30 [--out benchmarks/target/soak] [--services 10] [--per-service 20]
 *     [--channels 20] [--rate 500] [--weights-per-second 20] [--restart-every 300]
 *     [--freeze-at 450] [--freeze-seconds 5]
 * }</pre>
 */
public final class SoakBench {

  /**
   * One soak's shape. Restarts happen at every multiple of {@code restartEverySeconds} up to 15 s
   * before the end; the freeze at {@code freezeAtSeconds} (none if 0).
   */
  public record Settings(int loadSeconds, int services, int perService, int channels, int rate,
      int weightsPerSecond, int restartEverySeconds, int freezeAtSeconds, int freezeSeconds,
      int sampleSeconds, int warmupSeconds, int windowSeconds, Path out) {

    /** The defaults for a run of {@code loadSeconds}: restarts every 5 minutes, or thrice in a short run. */
    public static Settings defaults(int loadSeconds, Path out) {
      int restartEvery = Math.min(300, loadSeconds / 3);
      return new Settings(loadSeconds, 10, 20, 20, 500, 20, restartEvery, restartEvery * 3 / 2, 5, 10, 120, 600, out);
    }

    /** Whether the run is long enough to compare the window after warm-up with the last one. */
    public boolean checksFlatness() {
      return loadSeconds >= warmupSeconds + 2 * windowSeconds;
    }
  }

  private SoakBench() {}

  /** The name of service {@code s}. */
  static String service(String prefix, int s) {
    return String.format(Locale.ROOT, "%s-s%02d", prefix, s);
  }

  public static void main(String[] args) throws Exception {
    Settings s;
    try {
      int minutes = intArg(args, "--minutes", 2);
      Settings d = Settings.defaults(minutes * 60, Path.of(stringArg(args, "--out", "benchmarks/target/soak")));
      s = new Settings(d.loadSeconds(), intArg(args, "--services", d.services()),
          intArg(args, "--per-service", d.perService()), intArg(args, "--channels", d.channels()),
          intArg(args, "--rate", d.rate()), intArg(args, "--weights-per-second", d.weightsPerSecond()),
          intArg(args, "--restart-every", d.restartEverySeconds()), intArg(args, "--freeze-at", d.freezeAtSeconds()),
          intArg(args, "--freeze-seconds", d.freezeSeconds()), d.sampleSeconds(), d.warmupSeconds(),
          d.windowSeconds(), d.out());
      if (minutes < 1 || s.services() < 1 || s.perService() < 2 || s.channels() < s.services() || s.rate() < 1
          || s.weightsPerSecond() < 1 || s.restartEverySeconds() < 10 || s.freezeSeconds() < 1) {
        throw new IllegalArgumentException("need --minutes >= 1, --per-service >= 2, --channels >= --services >= 1,"
            + " --rate and --weights-per-second >= 1, --restart-every >= 10, --freeze-seconds >= 1");
      }
    } catch (IllegalArgumentException e) { // NumberFormatException included
      System.err.println("bench-soak: " + e.getMessage());
      System.exit(2);
      return;
    }
    SoakReport report = new SoakRun(s, System.out).run();
    System.out.println();
    System.out.print(report.summary());
    System.out.println("files in " + s.out().toAbsolutePath());
    System.exit(report.passed() ? 0 : 1);
  }
}
