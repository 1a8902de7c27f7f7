package io.steelyard.benchmarks.soak;

import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;

/**
 * What a soak gathered and the verdict on it. The targets: no failed call outside the window of
 * a member restart (from the stop until 2 s after the cluster is healthy again); every server's
 * last acknowledged weight in etcd, and etcd holding exactly the servers that run; every channel's
 * view equal to etcd's contents; all planned faults done; and, in a run long enough, heap after GC,
 * threads outside grpc's executor pool and open file descriptors of both JVMs flat: the mean of the
 * last window at most {@value #FLAT_PERCENT} % above the mean of the window after warm-up. A leak
 * only grows, so a fall passes; the pool's threads follow the load, so the live thread total is
 * shown but not a target.
 */
public final class SoakReport {

  static final double FLAT_PERCENT = 5.0;
  static final long RESTART_WINDOW_NANOS = TimeUnit.SECONDS.toNanos(2);

  /** One sample, taken every 10 s; {@code t} in seconds since the load began. */
  public record Sample(double t, String load1, long agentHeap, int agentThreads, long agentFds,
      int agentPooledThreads, long callersHeap, int callersThreads, long callersFds, int callersPooledThreads, long watchStreams, long dbBytes, int membersServing, long calls,
      long failed, int live, long joins, long leaves, long weightsAcked, long weightsFailed, long recoveries,
      long slowestCallNanos, long callsSlowerThan1s) {

    static final String CSV_HEADER = "t_s,load1,agent_heap_after_gc_bytes,agent_threads,agent_fds,agent_grpc_executor_threads,"
        + "callers_heap_after_gc_bytes,callers_threads,callers_fds,callers_grpc_executor_threads,etcd_watch_streams,etcd_db_bytes,"
        + "etcd_members_serving,calls,failed_calls,servers_live,joins,leaves,weights_acked,weights_failed,"
        + "registration_recoveries,slowest_call_s,calls_slower_than_1s";

    String csv() {
      return String.format(Locale.ROOT, "%.1f,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%.3f,%d", t, load1,
          agentHeap, agentThreads, agentFds, agentPooledThreads, callersHeap, callersThreads, callersFds,
          callersPooledThreads, watchStreams, dbBytes,
          membersServing, calls, failed, live, joins, leaves, weightsAcked, weightsFailed, recoveries,
          slowestCallNanos / 1e9, callsSlowerThan1s);
    }

    String describe() {
      return String.format(Locale.ROOT, "%5.0f s: heap %.1f/%.1f MB, threads %d/%d, fds %d/%d, watch streams %d,"
              + " db %.1f MB, calls %d (failed %d, slowest %.1f s), weights acked %d (failed %d), joins %d, load %s",
          t, agentHeap / 1e6, callersHeap / 1e6, agentThreads, callersThreads, agentFds, callersFds, watchStreams,
          dbBytes / 1e6, calls, failed, slowestCallNanos / 1e9, weightsAcked, weightsFailed, joins, load1);
    }
  }

  /** A target, what was measured and whether it was met; {@code met} null when not checked. */
  record Check(String target, String measured, Boolean met) {}

  private final SoakBench.Settings s;
  private final long t0;
  private final String loadAtStart;
  private final String loadAtEnd;
  private final List<Sample> samples;
  private final List<Chaos.Event> events;
  private final List<long[]> failures = new ArrayList<>(); // issued, failed, inWindow (0/1)
  private final List<String> failureLines = new ArrayList<>();
  private final List<Check> checks = new ArrayList<>();
  private final List<String> problems = new ArrayList<>();
  private final List<Left> leftServers = new ArrayList<>();

  SoakReport(SoakBench.Settings s, long t0, String loadAtStart, String loadAtEnd, List<Sample> samples,
      List<Chaos.Event> events, int plannedEvents, List<String> callerLines, List<String> liveLines,
      Map<String, Map<String, Integer>> etcd, List<String> viewDiffs) {
    this.s = s;
    this.t0 = t0;
    this.loadAtStart = loadAtStart;
    this.loadAtEnd = loadAtEnd;
    this.samples = List.copyOf(samples);
    this.events = List.copyOf(events);
    for (String line : liveLines) {
      String[] f = line.split(" ");
      if (f[0].equals("LEFT")) {
        leftServers.add(new Left(f[1], Long.parseLong(f[2]), Long.parseLong(f[3]), Boolean.parseBoolean(f[4])));
      }
    }
    long calls = 0;
    long callsUnderWay = 0;
    for (String line : callerLines) {
      String[] f = line.split(" ", 5);
      if (f[0].equals("FAIL")) {
        long issued = Long.parseLong(f[1]);
        long at = Long.parseLong(f[2]);
        boolean inWindow = inRestartWindow(issued) || inRestartWindow(at);
        failures.add(new long[] {issued, at, inWindow ? 1 : 0});
        String description = f.length > 4 ? f[4].replace("\"", "'") : "";
        failureLines.add(String.format(Locale.ROOT, "%.3f,%.3f,%s,%s,%s,\"%s\"", (issued - t0) / 1e9,
            (at - t0) / 1e9, inWindow, f[3], leaving(description, issued), description));
      } else if (f[0].equals("CALLS")) {
        calls = Long.parseLong(f[1]);
        callsUnderWay = Long.parseLong(f[3]);
      }
    }
    long outside = failures.stream().filter(f -> f[2] == 0).count();
    long slowest = samples.stream().mapToLong(Sample::slowestCallNanos).max().orElse(0);
    long slow = samples.isEmpty() ? 0 : samples.get(samples.size() - 1).callsSlowerThan1s();
    checks.add(new Check("failed calls outside a 2 s window after each member restart = 0",
        String.format(Locale.ROOT, "%d of %,d calls (%d inside the windows; %d still under way at the end);"
                + " the slowest successful call took %.1f s, %d took over 1 s (deadline %d s)",
            outside, calls, failures.size() - outside, callsUnderWay, slowest / 1e9, slow, SoakCallers.DEADLINE_SECONDS),
        outside == 0 && calls > 0 && callsUnderWay == 0));
    checkWeights(liveLines, etcd);
    checks.add(new Check("every channel's view equal to etcd's contents",
        viewDiffs.isEmpty() ? "all " + s.channels() + " exact" : viewDiffs.size() + " differ: " + viewDiffs,
        viewDiffs.isEmpty()));
    long restarts = events.stream().filter(e -> e.kind().equals("restart")).count();
    checks.add(new Check("every planned fault done",
        String.format(Locale.ROOT, "%d of %d (%d member restarts, %d leader freeze)", events.size(), plannedEvents,
            restarts, events.size() - restarts),
        events.size() == plannedEvents));
    checkFlat("agent JVM heap after GC", Sample::agentHeap);
    checkFlat("callers JVM heap after GC", Sample::callersHeap);
    checkFlat("agent JVM threads outside grpc's executor pool", x -> x.agentThreads() - x.agentPooledThreads());
    checkFlat("callers JVM threads outside grpc's executor pool", x -> x.callersThreads() - x.callersPooledThreads());
    report("agent JVM live threads", Sample::agentThreads);
    report("callers JVM live threads", Sample::callersThreads);
    checkFlat("agent JVM open file descriptors", Sample::agentFds);
    checkFlat("callers JVM open file descriptors", Sample::callersFds);
  }

  /** A server's way out: from its deregistration to the end of its shutdown. */
  private record Left(String address, long startNanos, long endNanos, boolean clean) {}

  /**
   * Whether the failed call went to a server on its way out, as its description names the
   * connection ({@code remote_addr=127.0.0.1/127.0.0.1:PORT}): "leaving", "left" or "running".
   */
  private String leaving(String description, long issued) {
    for (Left l : leftServers) {
      if (description.contains(":" + l.address().substring(l.address().lastIndexOf(':') + 1) + "]")) {
        return issued < l.startNanos() ? "before-leaving" : issued <= l.endNanos() ? "leaving" : "left";
      }
    }
    return "running";
  }

  private boolean inRestartWindow(long nanos) {
    for (Chaos.Event e : events) {
      if (e.kind().equals("restart") && nanos >= e.startNanos() && nanos <= e.endNanos() + RESTART_WINDOW_NANOS) {
        return true;
      }
    }
    return false;
  }

  /**
   * The agent's word against etcd's: each running server's key present, with the weight the
   * server believes it holds, which is at least the last acknowledged one; no key of a server gone.
   */
  private void checkWeights(List<String> liveLines, Map<String, Map<String, Integer>> etcd) {
    int live = 0;
    int lost = 0;
    int wrong = 0;
    int missing = 0;
    int notRegistered = 0;
    Map<String, TreeSet<String>> expectedKeys = new TreeMap<>();
    for (String line : liveLines) {
      String[] f = line.split(" ");
      if (f[0].equals("UNDERWAY") && (!f[1].equals("0") || !f[2].equals("0"))) {
        problems.add("work still under way in the agent at the end: " + f[1] + " leaves, " + f[2] + " weight changes");
      }
      if (!f[0].equals("LIVE")) {
        continue;
      }
      live++;
      String service = f[1];
      String address = f[2];
      int believed = Integer.parseInt(f[3]);
      int lastAcked = Integer.parseInt(f[5]);
      notRegistered += f[6].equals("REGISTERED") ? 0 : 1;
      expectedKeys.computeIfAbsent(service, x -> new TreeSet<>()).add(address);
      Integer inEtcd = etcd.getOrDefault(service, Map.of()).get(address);
      if (inEtcd == null) {
        missing++;
        problems.add(line + ": no key in etcd");
      } else if (inEtcd < lastAcked) {
        lost++;
        problems.add(line + ": etcd holds " + inEtcd + ", below the last acknowledged weight");
      } else if (inEtcd != believed) {
        wrong++;
        problems.add(line + ": etcd holds " + inEtcd + ", the server believes " + believed);
      }
    }
    int stale = 0;
    for (var e : etcd.entrySet()) {
      for (String address : e.getValue().keySet()) {
        if (!expectedKeys.getOrDefault(e.getKey(), new TreeSet<>()).contains(address)) {
          stale++;
          problems.add(e.getKey() + " " + address + ": in etcd, but that server left");
        }
      }
    }
    checks.add(new Check("0 lost acknowledged weights; etcd holds exactly the running servers",
        String.format(Locale.ROOT, "%d servers: %d lost, %d other than believed, %d keys missing, %d keys of"
            + " servers gone, %d not REGISTERED", live, lost, wrong, missing, stale, notRegistered),
        live > 0 && lost + wrong + missing + stale + notRegistered == 0));
  }

  /** Whether etcd holds every running server at the weight it believes in (the end is settled). */
  static boolean weightsSettled(List<String> liveLines, Map<String, Map<String, Integer>> etcd) {
    int live = 0;
    for (String line : liveLines) {
      String[] f = line.split(" ");
      if (f[0].equals("LIVE")) {
        live++;
        if (!Objects.equals(etcd.getOrDefault(f[1], Map.of()).get(f[2]), Integer.parseInt(f[3]))) {
          return false;
        }
      }
    }
    return live == etcd.values().stream().mapToInt(Map::size).sum();
  }

  private void checkFlat(String what, ToDoubleFunction<Sample> value) {
    if (!s.checksFlatness()) {
      checks.add(new Check(what + " flat", "not checked: the run is shorter than " + s.warmupSeconds()
          + " s of warm-up and two windows of " + s.windowSeconds() + " s", null));
      return;
    }
    double early = mean(value, s.warmupSeconds(), s.warmupSeconds() + s.windowSeconds());
    double late = mean(value, s.loadSeconds() - s.windowSeconds(), s.loadSeconds() + 1);
    double change = 100.0 * (late - early) / early;
    checks.add(new Check(what + " flat (last " + s.windowSeconds() / 60 + " min at most " + FLAT_PERCENT
        + " % above the " + s.windowSeconds() / 60 + " min after warm-up)",
        String.format(Locale.ROOT, "%s -> %s (%+.1f %%)", format(what, early), format(what, late), change),
        change <= FLAT_PERCENT));
  }

  /** The same comparison as {@link #checkFlat}, shown but not a target. */
  private void report(String what, ToDoubleFunction<Sample> value) {
    if (s.checksFlatness()) {
      double early = mean(value, s.warmupSeconds(), s.warmupSeconds() + s.windowSeconds());
      double late = mean(value, s.loadSeconds() - s.windowSeconds(), s.loadSeconds() + 1);
      checks.add(new Check(what + " (shown, not a target)",
          String.format(Locale.ROOT, "%.1f -> %.1f (%+.1f %%)", early, late, 100.0 * (late - early) / early), null));
    }
  }

  private double mean(ToDoubleFunction<Sample> value, double from, double to) {
    return samples.stream().filter(x -> x.t() >= from && x.t() < to).mapToDouble(value).average().orElse(Double.NaN);
  }

  private static String format(String what, double v) {
    return what.contains("heap") ? String.format(Locale.ROOT, "%.1f MB", v / 1e6) : String.format(Locale.ROOT, "%.1f", v);
  }

  /** Whether every checked target was met. */
  public boolean passed() {
    return checks.stream().allMatch(c -> c.met() == null || c.met());
  }

  /** How many targets were checked (flatness is not, in a short run). */
  public long checked() {
    return checks.stream().filter(c -> c.met() != null).count();
  }

  /** The checks that were missed, one line each; empty when {@link #passed()}. */
  public List<String> missed() {
    return checks.stream().filter(c -> c.met() != null && !c.met()).map(c -> c.target() + ": " + c.measured()).toList();
  }

  /** The summary in Markdown: settings, faults, the targets table, samples, the first problems. */
  public String summary() {
    StringBuilder b = new StringBuilder();
    b.append(String.format(Locale.ROOT, "Soak: %d s of load, %d servers (%d services x %d, churn 1/s), %d weight"
            + " changes/s, %d channels at %d calls/s (weighted_least_request), etcd 3.4 x 3; load average %s at the"
            + " start, %s at the end.%n%n", s.loadSeconds(), s.services() * s.perService(), s.services(),
        s.perService(), s.weightsPerSecond(), s.channels(), s.rate(), loadAtStart, loadAtEnd));
    for (Chaos.Event e : events) {
      b.append("- ").append(e.describe(t0)).append('\n');
    }
    b.append(String.format(Locale.ROOT, "- %d servers left (deregistered, drained 1 s, shut down); %d of them still"
        + " had a call running after the 10 s grace period%n", leftServers.size(),
        leftServers.stream().filter(l -> !l.clean()).count()));
    b.append("\n| target | measured | met |\n|---|---|---|\n");
    for (Check c : checks) {
      b.append("| ").append(c.target()).append(" | ").append(c.measured()).append(" | ")
          .append(c.met() == null ? "not checked" : c.met() ? "yes" : "**no**").append(" |\n");
    }
    b.append("\n| min | heap after GC agent / callers (MB) | threads agent / callers | fds agent / callers"
        + " | etcd watch streams | etcd db (MB) | calls (failed) | slowest call (s) | weights acked | joins | load |\n"
        + "|---|---|---|---|---|---|---|---|---|---|---|\n");
    int step = Math.max(1, samples.size() / 12);
    for (int i = step - 1; i < samples.size(); i += step) {
      Sample x = samples.get(i);
      b.append(String.format(Locale.ROOT,
          "| %.1f | %.1f / %.1f | %d / %d | %d / %d | %d | %.1f | %,d (%d) | %.2f | %,d | %,d | %s |%n",
          x.t() / 60, x.agentHeap() / 1e6, x.callersHeap() / 1e6, x.agentThreads(), x.callersThreads(), x.agentFds(),
          x.callersFds(), x.watchStreams(), x.dbBytes() / 1e6, x.calls(), x.failed(), x.slowestCallNanos() / 1e9,
          x.weightsAcked(), x.joins(), x.load1()));
    }
    if (!failureLines.isEmpty()) {
      b.append("\nFailed calls (issued s, failed s, inside a restart window, code, the server then, description),"
          + " first 10:\n\n");
      failureLines.stream().limit(10).forEach(l -> b.append("    ").append(l).append('\n'));
    }
    if (!problems.isEmpty()) {
      b.append("\nProblems (first 20 of ").append(problems.size()).append("):\n\n");
      problems.stream().limit(20).forEach(p -> b.append("- ").append(p).append('\n'));
    }
    b.append("\nTargets ").append(passed() ? "met" : "MISSED").append('\n');
    return b.toString();
  }

  /** Writes {@code samples.csv}, {@code failures.csv}, {@code summary.md} and {@code soak.png}. */
  void write() throws IOException {
    List<String> csv = new ArrayList<>();
    csv.add(Sample.CSV_HEADER);
    samples.forEach(x -> csv.add(x.csv()));
    Files.write(s.out().resolve("samples.csv"), csv);
    List<String> f = new ArrayList<>();
    f.add("issued_s,failed_s,in_restart_window,code,server,description");
    f.addAll(failureLines);
    Files.write(s.out().resolve("failures.csv"), f);
    Files.writeString(s.out().resolve("summary.md"), summary());
    SoakChart.draw(samples, events, t0, s.out().resolve("soak.png"));
  }

  /** The first address where two views differ, for a message. */
  static String firstDifference(Map<String, Integer> view, Map<String, Integer> expected) {
    TreeSet<String> all = new TreeSet<>(view.keySet());
    all.addAll(expected.keySet());
    for (String a : all) {
      if (!Objects.equals(view.get(a), expected.get(a))) {
        return a + ": channel " + view.get(a) + ", etcd " + expected.get(a);
      }
    }
    return "equal";
  }
}
