package io.steelyard.benchmarks.soak;

import static io.steelyard.benchmarks.HostStats.loadAverage;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ValueCodec;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.EtcdMember;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * One soak from start to end: etcd, the two child JVMs, the faults, the samples, the final
 * reading. {@link SoakReport} judges what it gathered.
 */
public final class SoakRun {

  static final String PREFIX = "soak";

  private final SoakBench.Settings s;
  private final PrintStream progress;

  public SoakRun(SoakBench.Settings settings, PrintStream progress) {
    this.s = settings;
    this.progress = progress;
  }

  /** Runs the soak; the report is also written to the settings' output folder. */
  public SoakReport run() throws Exception {
    Files.createDirectories(s.out());
    String loadAtStart = loadAverage();
    // Periodic compaction, as a production cluster runs: without it etcd's db only grows.
    try (EtcdCluster etcd = EtcdCluster.builder().members(3).backend(EtcdCluster.Backend.BINARY)
        .extraArgs("--auto-compaction-mode=periodic", "--auto-compaction-retention=1m").build()) {
      etcd.start();
      String endpoints = etcd.endpoints();
      progress.printf(Locale.ROOT, "etcd 3.4 x 3 at %s; java %s, %d cpus, load average %s%n"
              + "%d servers (%d services x %d) with churn 1/s and %d weight changes/s; %d channels at %d calls/s;"
              + " %d s of load%n",
          endpoints, System.getProperty("java.version"), Runtime.getRuntime().availableProcessors(), loadAtStart,
          s.services() * s.perService(), s.services(), s.perService(), s.weightsPerSecond(), s.channels(), s.rate(),
          s.loadSeconds());
      try (Client truth = EtcdConnection.of(endpoints).connect();
          ChildProcess agent = ChildProcess.start("agent", SoakAgent.class, "384m", s.out().resolve("agent.log"),
              List.of("--endpoints", endpoints, "--service-prefix", PREFIX,
                  "--services", Integer.toString(s.services()), "--per-service", Integer.toString(s.perService()),
                  "--weights-per-second", Integer.toString(s.weightsPerSecond())))) {
        agent.expect("READY");
        try (ChildProcess callers = ChildProcess.start("callers", SoakCallers.class, "384m",
            s.out().resolve("callers.log"),
            List.of("--endpoints", endpoints, "--service-prefix", PREFIX,
                "--services", Integer.toString(s.services()), "--channels", Integer.toString(s.channels()),
                "--rate", Integer.toString(s.rate())))) {
          callers.expect("READY");
          Map<String, Map<String, Integer>> start = read(truth);
          if (!awaitViews(callers, start, 60).isEmpty()) {
            throw new IllegalStateException("the channels never saw etcd's first contents: " + awaitViews(callers, start, 0));
          }
          progress.println("   servers registered, every channel's view exact; load starts");
          agent.ask("GO");
          callers.ask("GO");
          long t0 = System.nanoTime();
          Chaos chaos = new Chaos(etcd, t0, s, progress);
          Thread chaosThread = new Thread(chaos, "soak-chaos");
          chaosThread.start();

          List<SoakReport.Sample> samples = new ArrayList<>();
          long end = t0 + TimeUnit.SECONDS.toNanos(s.loadSeconds());
          for (long next = t0 + TimeUnit.SECONDS.toNanos(s.sampleSeconds()); next <= end;
              next += TimeUnit.SECONDS.toNanos(s.sampleSeconds())) {
            TimeUnit.NANOSECONDS.sleep(Math.max(0, next - System.nanoTime()));
            SoakReport.Sample sample = sample(etcd, agent, callers, (System.nanoTime() - t0) / 1e9);
            samples.add(sample);
            if (samples.size() % 6 == 0) {
              progress.println("   " + sample.describe());
            }
          }
          chaosThread.join(TimeUnit.MINUTES.toMillis(2));
          chaosThread.interrupt();

          List<String> failures = callers.ask("STOP");
          List<String> live = agent.ask("QUIESCE");
          Map<String, Map<String, Integer>> finalEtcd = read(truth);
          long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
          List<String> viewDiffs;
          // etcd's contents settle once the last remembered weight is written; views follow them.
          do {
            finalEtcd = read(truth);
            viewDiffs = awaitViews(callers, finalEtcd, 0);
          } while ((!viewDiffs.isEmpty() || !SoakReport.weightsSettled(live, finalEtcd))
              && System.nanoTime() < deadline && sleep(200));
          SoakReport report = new SoakReport(s, t0, loadAtStart, loadAverage(), samples, chaos.events(),
              chaos.planned(), failures, live, finalEtcd, viewDiffs);
          report.write();
          return report;
        }
      }
    }
  }

  private static boolean sleep(long millis) throws InterruptedException {
    Thread.sleep(millis); // a harness polling etcd and the channels, bounded by its caller's deadline
    return true;
  }

  private SoakReport.Sample sample(EtcdCluster etcd, ChildProcess agent, ChildProcess callers, double t)
      throws Exception {
    String[] a = agent.ask("SAMPLE").get(0).split(" ");
    String[] c = callers.ask("SAMPLE").get(0).split(" ");
    long watchStreams = 0;
    long dbBytes = 0;
    int serving = 0;
    for (EtcdMember m : etcd.members()) {
      if (!m.isRunning() || m.isFrozen()) {
        continue;
      }
      try {
        watchStreams += (long) m.metric("etcd_debugging_mvcc_watch_stream_total");
        dbBytes = Math.max(dbBytes, (long) m.metric("etcd_mvcc_db_total_size_in_bytes"));
        serving++;
      } catch (RuntimeException notAnswering) {
        // restarting: counted as not serving
      }
    }
    return new SoakReport.Sample(t, loadAverage().split(" ")[0],
        Long.parseLong(a[1]), Integer.parseInt(a[2]), Long.parseLong(a[3]), Integer.parseInt(a[4]),
        Long.parseLong(c[1]), Integer.parseInt(c[2]), Long.parseLong(c[3]), Integer.parseInt(c[4]),
        watchStreams, dbBytes, serving, Long.parseLong(c[5]), Long.parseLong(c[6]),
        Integer.parseInt(a[5]), Long.parseLong(a[6]), Long.parseLong(a[7]), Long.parseLong(a[9]),
        Long.parseLong(a[10]), Long.parseLong(a[11]), Long.parseLong(c[7]), Long.parseLong(c[8]));
  }

  /** Waits up to {@code seconds} for every channel's view to equal {@code truth}; what still differs. */
  private static List<String> awaitViews(ChildProcess callers, Map<String, Map<String, Integer>> truth, int seconds)
      throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (true) {
      List<String> differ = new ArrayList<>();
      for (String line : callers.ask("VIEWS")) {
        String[] f = line.split(" ", 4);
        Map<String, Integer> view = new TreeMap<>();
        if (f.length == 4 && !f[3].isEmpty()) {
          for (String pair : f[3].split(",")) {
            String[] kv = pair.split("=");
            view.put(kv[0], Integer.parseInt(kv[1]));
          }
        }
        Map<String, Integer> expected = truth.getOrDefault(f[2], Map.of());
        if (!view.equals(expected)) {
          differ.add(String.format(Locale.ROOT, "channel %s (%s): %d addresses, etcd %d, %s", f[1], f[2],
              view.size(), expected.size(), SoakReport.firstDifference(view, expected)));
        }
      }
      if (differ.isEmpty() || System.nanoTime() >= deadline) {
        return differ;
      }
      sleep(100);
    }
  }

  /** etcd's contents under the soak's services: service to address to weight. */
  private static Map<String, Map<String, Integer>> read(Client etcd) throws Exception {
    KeyLayout layout = KeyLayout.defaults();
    String root = layout.registryPrefix();
    List<KeyValue> kvs = etcd.getKVClient()
        .get(ByteSequence.from(root + PREFIX + "-", StandardCharsets.UTF_8), GetOption.builder().isPrefix(true).build())
        .get(30, TimeUnit.SECONDS).getKvs();
    Map<String, Map<String, Integer>> out = new TreeMap<>();
    for (KeyValue kv : kvs) {
      String service = layout.serviceOf(kv.getKey().toString(StandardCharsets.UTF_8)).orElse(null);
      if (service != null
          && ValueCodec.decode(kv.getValue().getBytes()) instanceof DecodedValue.Accepted a) {
        out.computeIfAbsent(service, x -> new TreeMap<>()).put(a.address(), a.weight());
      }
    }
    return out;
  }
}
