package io.steelyard.benchmarks.capacity;

import io.steelyard.testkit.grpc.StaticResolverProvider;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.stream.Collectors;

/**
 * The capacity scenarios benchmark: every {@link Scenario} × {@link CapacityMix} × {@link
 * Policy}, each run on a fresh fleet of capacity-modelled servers ({@link Fleet}) behind real Netty
 * servers on loopback, through a real channel with the real policy, under an open-loop Poisson
 * load at a fixed share of the fleet's capacity. Prints Markdown tables (also written to {@code
 * benchmarks/target/capacity/results.md}) and draws one chart per (scenario, mix) ({@link
 * Charts}).
 *
 * <pre>
 * scripts/bench-capacity                                  # everything (about 15 min)
 * scripts/bench-capacity --scenarios c --mixes steep      # one cell
 * scripts/bench-capacity --policies weighted_least_request,round_robin --measured 6s
 * scripts/bench-capacity --scenarios e,f,g --measured 9s  # slow start, ejection, panic
 * </pre>
 *
 * To add a scenario, a mix or a policy, add it to {@link Scenario#ALL}, {@link CapacityMix#ALL}
 * or {@link Policy#ALL}: the run, the tables and the charts pick it up. The scenarios of {@link
 * Scenario#SELECTABLE} run only when named, each with its own policies and mixes (which {@code
 * --policies} and {@code --mixes} replace when given).
 */
public final class CapacityBench {

  /** Where in the measured period (fraction) a scenario's event happens. */
  static final double EVENT_AT = 1 / 3.0;

  /** The label whose targets the report checks, and the labels it is compared with. */
  static final String SUBJECT = "weighted_least_request";

  /** Run parameters; every one can be set on the command line. */
  record Settings(
      double load,
      Duration serviceTime,
      Duration deadline,
      Duration warmup,
      Duration measured,
      Duration bucket,
      Path charts,
      Path results) {

    static Settings defaults() {
      return new Settings(
          0.5,
          Duration.ofMillis(50),
          Duration.ofMillis(750),
          Duration.ofSeconds(1),
          Duration.ofSeconds(6),
          Duration.ofMillis(500),
          Path.of("docs/img"),
          Path.of("benchmarks/target/capacity"));
    }
  }

  private CapacityBench() {}

  public static void main(String[] args) throws Exception {
    Settings settings = Settings.defaults();
    List<Scenario> scenarios = Scenario.ALL;
    List<Scenario> known = new ArrayList<>(Scenario.ALL);
    known.addAll(Scenario.SELECTABLE);
    List<CapacityMix> mixes = null; // each scenario's own
    List<Policy> policies = null; // each scenario's own
    List<Policy> variants = new ArrayList<>(); // run after the chosen policies, on every cell
    for (int i = 0; i < args.length; i++) {
      String value = i + 1 < args.length ? args[i + 1] : null;
      switch (args[i]) {
        case "--scenarios" -> scenarios = select(known, Scenario::id, value);
        case "--mixes" -> mixes = select(CapacityMix.ALL, CapacityMix::name, value);
        case "--policies" -> policies = select(Policy.all(), Policy::label, value);
        case "--variant" -> {
          try {
            variants.add(Policy.variant(value));
          } catch (IllegalArgumentException e) {
            usage(e.getMessage());
          }
        }
        case "--load" -> settings = with(settings, "load", value);
        case "--service-time" -> settings = with(settings, "service", value);
        case "--deadline" -> settings = with(settings, "deadline", value);
        case "--warmup" -> settings = with(settings, "warmup", value);
        case "--measured" -> settings = with(settings, "measured", value);
        case "--charts" -> settings = with(settings, "charts", value);
        default -> usage("unknown argument: " + args[i]);
      }
      i++;
    }
    if (!variants.isEmpty()) {
      List<Policy> base = policies;
      scenarios = scenarios.stream().map(s -> s.withPolicies(plus(base, s, variants))).toList();
      policies = null;
    }
    Files.createDirectories(settings.charts());
    Files.createDirectories(settings.results());

    int runs = 0;
    for (Scenario scenario : scenarios) {
      runs += mixesOf(scenario, mixes).size() * policiesOf(scenario, policies).size();
    }
    System.out.printf(
        Locale.ROOT,
        "capacity benchmark: %d scenarios, %d runs, load %.0f %%, service time %d ms,"
            + " deadline %d ms, warm-up %d s + measured %d s per run, started %s%n",
        scenarios.size(), runs, settings.load() * 100,
        settings.serviceTime().toMillis(), settings.deadline().toMillis(),
        settings.warmup().toSeconds(), settings.measured().toSeconds(), Instant.now());

    List<List<RunResult>> cells = new ArrayList<>();
    ScheduledExecutorService replies = Executors.newScheduledThreadPool(2, daemon("replies"));
    ScheduledExecutorService sampler = Executors.newScheduledThreadPool(1, daemon("sampler"));
    try (StaticResolverProvider resolver = StaticResolverProvider.register("capacity")) {
      // One short throwaway run first, so that the first policy measured does not pay for the
      // JIT compiling Netty, grpc and the benchmark itself.
      Settings warm =
          new Settings(settings.load(), settings.serviceTime(), settings.deadline(),
              Duration.ofSeconds(1), Duration.ofSeconds(4), settings.bucket(), settings.charts(),
              settings.results());
      new CapacityRun(warm, resolver, replies, sampler)
          .run(Scenario.WEIGHTS_RIGHT, CapacityMix.EQUAL, Policy.ALL.get(0), -1);
      CapacityRun runner = new CapacityRun(settings, resolver, replies, sampler);
      int index = 0;
      for (Scenario scenario : scenarios) {
        for (CapacityMix mix : mixesOf(scenario, mixes)) {
          List<RunResult> cell = new ArrayList<>();
          for (Policy policy : policiesOf(scenario, policies)) {
            RunResult result = runner.run(scenario, mix, policy, index++);
            RunResult.Summary whole = result.whole();
            System.out.printf(
                Locale.ROOT,
                "  (%s) %-9s %-34s p50 %7.1f  p99 %7.1f  max %7.1f ms  failed %5d/%d"
                    + "  (load average %.1f; generator late by %.1f ms at worst%s)%n",
                scenario.id(), mix.name(), policy.label(), whole.p50Millis(), whole.p99Millis(),
                whole.maxMillis(), whole.failures(), whole.calls(), result.loadAverage,
                runner.lastMaxLagMillis,
                runner.lastIncomplete == 0 ? "" : "; " + runner.lastIncomplete + " calls never ended");
            cell.add(result);
          }
          Path chart = Charts.draw(cell, settings.charts(), settings);
          System.out.println("  chart: " + chart);
          cells.add(cell);
        }
      }
    } finally {
      replies.shutdownNow();
      sampler.shutdownNow();
    }
    String report = Report.markdown(cells, settings);
    Files.writeString(settings.results().resolve("results.md"), report, StandardCharsets.UTF_8);
    System.out.println();
    System.out.println(report);
  }

  /** The mixes chosen on the command line, else the scenario's own, else every mix. */
  private static List<CapacityMix> mixesOf(Scenario scenario, List<CapacityMix> chosen) {
    if (chosen != null) {
      return chosen;
    }
    return scenario.mixes().isEmpty() ? CapacityMix.ALL : scenario.mixes();
  }

  /** The policies chosen on the command line, else the scenario's own, else every policy. */
  private static List<Policy> policiesOf(Scenario scenario, List<Policy> chosen) {
    if (chosen != null) {
      return chosen;
    }
    return scenario.policies().isEmpty() ? Policy.ALL : scenario.policies();
  }

  /** The scenario's policies (or the chosen ones), then the variants. */
  private static List<Policy> plus(List<Policy> chosen, Scenario scenario, List<Policy> variants) {
    List<Policy> all = new ArrayList<>(policiesOf(scenario, chosen));
    all.addAll(variants);
    return List.copyOf(all);
  }

  private static <T> List<T> select(
      List<T> all, java.util.function.Function<T, String> name, String csv) {
    if (csv == null) {
      usage("missing value");
    }
    List<String> wanted = Arrays.asList(csv.split(","));
    List<T> chosen = all.stream().filter(t -> wanted.contains(name.apply(t))).collect(Collectors.toList());
    if (chosen.size() != wanted.size()) {
      usage(
          "unknown name in " + csv + " (expected: "
              + all.stream().map(name).collect(Collectors.joining(", ")) + ")");
    }
    return chosen;
  }

  private static Settings with(Settings s, String field, String value) {
    if (value == null) {
      usage("missing value for " + field);
    }
    return switch (field) {
      case "load" -> new Settings(Double.parseDouble(value), s.serviceTime(), s.deadline(), s.warmup(), s.measured(), s.bucket(), s.charts(), s.results());
      case "service" -> new Settings(s.load(), duration(value), s.deadline(), s.warmup(), s.measured(), s.bucket(), s.charts(), s.results());
      case "deadline" -> new Settings(s.load(), s.serviceTime(), duration(value), s.warmup(), s.measured(), s.bucket(), s.charts(), s.results());
      case "warmup" -> new Settings(s.load(), s.serviceTime(), s.deadline(), duration(value), s.measured(), s.bucket(), s.charts(), s.results());
      case "measured" -> new Settings(s.load(), s.serviceTime(), s.deadline(), s.warmup(), duration(value), s.bucket(), s.charts(), s.results());
      case "charts" -> new Settings(s.load(), s.serviceTime(), s.deadline(), s.warmup(), s.measured(), s.bucket(), Path.of(value), s.results());
      default -> throw new IllegalArgumentException(field);
    };
  }

  /** {@code 20ms}, {@code 2s}. */
  private static Duration duration(String text) {
    if (text.endsWith("ms")) {
      return Duration.ofMillis(Long.parseLong(text.substring(0, text.length() - 2)));
    }
    if (text.endsWith("s")) {
      return Duration.ofMillis((long) (Double.parseDouble(text.substring(0, text.length() - 1)) * 1000));
    }
    usage("duration: " + text + " (expected: e.g. 20ms or 2s)");
    return null;
  }

  private static void usage(String message) {
    System.err.println("bench-capacity: " + message);
    System.exit(2);
  }

  private static java.util.concurrent.ThreadFactory daemon(String name) {
    return r -> {
      Thread t = new Thread(r, "capacity-" + name);
      t.setDaemon(true);
      return t;
    };
  }

  static String formatShares(double[] shares) {
    return Arrays.stream(shares)
        .mapToObj(s -> String.format(Locale.ROOT, "%.0f", s * 100))
        .collect(Collectors.joining(":"));
  }

  static void write(Path file, String text) throws IOException {
    Files.writeString(file, text, StandardCharsets.UTF_8);
  }
}
