package io.steelyard.benchmarks.fleet;

import static io.steelyard.benchmarks.BenchArgs.intArg;
import static io.steelyard.benchmarks.BenchArgs.stringArg;
import static io.steelyard.benchmarks.HostStats.loadAverage;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import io.steelyard.discovery.DiscoveryStats;
import io.steelyard.discovery.ServiceWatcher;
import io.steelyard.discovery.Snapshot;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.registry.ValueCodec;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.EtcdGrpcProxy;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;

/**
 * Load held: a 3-member etcd cluster; one child JVM ({@link LoadHeldAgent}) with {@code
 * --registrations} registrations over {@code --services} services, changing {@code --rate}
 * weights per second for {@code --seconds}; this JVM with {@code --watchers} {@link
 * ServiceWatcher}s over those services (watcher {@code w} on service {@code w % services}). Then
 * the same through one {@code etcd grpc-proxy} in front of the cluster (registrations and watchers
 * both through it). A plain harness, not JMH: each figure is a distribution over real etcd round
 * trips.
 *
 * <p>It reports, per mode: the agent JVM's threads, heap after GC and CPU time (its own process);
 * this client JVM's threads and CPU; propagation latency p50/p99/max from a change acknowledged
 * to the agent to the change visible in each watcher of its service (and from the change issued);
 * and it checks, after the last change, that every watcher's view equals a fresh list read from
 * the cluster directly (addresses and weights), that etcd holds every registration (a key count)
 * and the last acknowledged weight of each. Any failed check makes the exit status 1.
 *
 * <p>The two JVMs' clocks: both stamp with {@link System#nanoTime()}, which HotSpot on Linux
 * reads from CLOCK_MONOTONIC, one clock for the whole machine.
 *
 * <pre>{@code
 * scripts/bench-load [--registrations 1000] [--services 20] [--watchers 50] [--rate 200]
 *     [--seconds 20] [--ttl 10] [--lease shared|separate] [--mode direct|proxy|both] [--runs 1]
 * }</pre>
 */
public final class LoadHeld {

  private LoadHeld() {}

  /** One run's figures. */
  record Result(String mode, double p50, double p99, double max, double issuedP50, double issuedP99,
      int changes, int failed, int unseen, double convergeMillis, boolean viewsExact, int keys,
      int lastWeightsWrong, String agentStats, int clientThreads, double clientCpuPercent, int etcdWatches) {}

  public static void main(String[] args) throws Exception {
    int n;
    int services;
    int watchers;
    int rate;
    int seconds;
    int ttl;
    int runs;
    try {
      n = intArg(args, "--registrations", 1_000);
      services = intArg(args, "--services", 20);
      watchers = intArg(args, "--watchers", 50);
      rate = intArg(args, "--rate", 200);
      seconds = intArg(args, "--seconds", 20);
      ttl = intArg(args, "--ttl", 10);
      runs = intArg(args, "--runs", 1);
    } catch (NumberFormatException e) {
      System.err.println("LoadHeld: not an integer: " + e.getMessage());
      System.exit(2);
      return;
    }
    String lease = stringArg(args, "--lease", "shared");
    String mode = stringArg(args, "--mode", "both");
    if (n < services || watchers < services || services < 1 || rate < 1 || seconds < 1 || runs < 1 || ttl < 2
        || !List.of("direct", "proxy", "both").contains(mode) || !List.of("shared", "separate").contains(lease)) {
      System.err.println("LoadHeld: need 1 <= services <= registrations and watchers; rate, seconds, runs >= 1;"
          + " ttl >= 2; --mode direct|proxy|both; --lease shared|separate");
      System.exit(2);
    }
    List<Result> results = new ArrayList<>();
    try (EtcdCluster etcd = EtcdCluster.builder().members(3).backend(EtcdCluster.Backend.BINARY).build()) {
      etcd.start();
      System.out.printf(Locale.ROOT,
          "etcd 3.4 x 3 at %s, java %s, %d cpus, load average %s%n"
              + "%d registrations (%s lease, TTL %d s) over %d services in a child JVM; %d watchers here;"
              + " %d weight changes/s for %d s%n",
          etcd.endpoints(), System.getProperty("java.version"), Runtime.getRuntime().availableProcessors(),
          loadAverage(), n, lease, ttl, services, watchers, rate, seconds);
      try (Client truth = EtcdConnection.of(etcd.endpoints()).connect()) {
        for (int r = 1; r <= runs; r++) {
          if (!mode.equals("proxy")) {
            results.add(run(etcd.endpoints(), truth, "direct", "load-direct-" + r, n, services, watchers,
                rate, seconds, ttl, lease));
          }
          if (!mode.equals("direct")) {
            try (EtcdGrpcProxy proxy = EtcdGrpcProxy.start(etcd)) {
              results.add(run(proxy.endpoint(), truth, "proxy", "load-proxy-" + r, n, services, watchers,
                  rate, seconds, ttl, lease));
            }
          }
        }
      }
    }
    System.out.printf(Locale.ROOT, "%n%-7s %8s %8s %8s %9s %9s %7s %6s %6s %9s %6s %5s %9s  %s%n",
        "mode", "p50 ms", "p99 ms", "max ms", "issued50", "issued99", "acked", "failed", "unseen", "converge",
        "exact", "keys", "clientcpu", "agent JVM");
    boolean ok = true;
    for (Result r : results) {
      System.out.printf(Locale.ROOT, "%-7s %8.1f %8.1f %8.1f %9.1f %9.1f %7d %6d %6d %7.0fms %6s %5d %8.1f%%  %s%n",
          r.mode, r.p50, r.p99, r.max, r.issuedP50, r.issuedP99, r.changes, r.failed, r.unseen, r.convergeMillis,
          r.viewsExact, r.keys, r.clientCpuPercent, r.agentStats);
      ok &= r.viewsExact && r.keys == n && r.failed == 0 && r.unseen == 0 && r.lastWeightsWrong == 0;
    }
    System.out.printf(Locale.ROOT, "load average at the end %s; checks %s%n", loadAverage(), ok ? "passed" : "FAILED");
    System.exit(ok ? 0 : 1);
  }

  private static Result run(String endpoint, Client truth, String mode, String prefix, int n, int services,
      int watcherCount, int rate, int seconds, int ttl, String lease) throws Exception {
    System.out.printf(Locale.ROOT, "-- %s: etcd at %s, services %s-sNN%n", mode, endpoint, prefix);
    Process agent = startAgent(endpoint, prefix, n, services, rate, seconds, ttl, lease);
    BufferedReader fromAgent =
        new BufferedReader(new InputStreamReader(agent.getInputStream(), StandardCharsets.UTF_8));
    Writer toAgent = new OutputStreamWriter(agent.getOutputStream(), StandardCharsets.UTF_8);
    try {
      String registered = expect(fromAgent, "REGISTERED");
      System.out.printf(Locale.ROOT, "   %d registrations in %s s%n", n, registered.split(" ")[1]);

      EtcdConnection conn = EtcdConnection.of(endpoint);
      List<Recorder> recorders = new ArrayList<>();
      List<ServiceWatcher> watchers = new ArrayList<>();
      for (int w = 0; w < watcherCount; w++) {
        Recorder rec = new Recorder(LoadHeldAgent.service(prefix, w, services));
        recorders.add(rec);
        watchers.add(ServiceWatcher.open(conn, KeyLayout.defaults(), rec.service, rec::onSnapshot));
      }
      try {
        Map<String, Map<String, Integer>> start = freshList(truth, prefix);
        awaitExact(recorders, watchers, start, 60);
        long clientCpu0 = LoadHeldAgent.processCpuNanos();
        long w0 = System.nanoTime();
        toAgent.write("GO\n");
        toAgent.flush();

        List<long[]> changes = new ArrayList<>(); // index, weight, issued, acked (0: failed)
        int[] believed = new int[n]; // the weight each registration believes it holds at the end
        String failedLine = null;
        String stats = null;
        for (String line; (line = fromAgent.readLine()) != null && !line.equals("DONE"); ) {
          if (line.startsWith("CHANGE ")) {
            String[] f = line.split(" ");
            changes.add(new long[] {Long.parseLong(f[1]), Long.parseLong(f[2]), Long.parseLong(f[3]), Long.parseLong(f[4])});
          } else if (line.startsWith("FINAL ")) {
            String[] f = line.split(" ");
            believed[Integer.parseInt(f[1])] = Integer.parseInt(f[2]);
          } else if (line.startsWith("FAILED ")) {
            failedLine = line;
          } else if (line.startsWith("STATS ")) {
            stats = line.substring(6);
          }
        }
        if (stats == null || failedLine == null) {
          throw new IllegalStateException("the agent JVM ended without its figures (exit " + agent.waitFor() + ")");
        }
        long doneAt = System.nanoTime();
        double clientCpuPercent = 100.0 * (LoadHeldAgent.processCpuNanos() - clientCpu0) / (doneAt - w0);

        // Every watcher ends with etcd's exact view, read afresh from the cluster itself.
        Map<String, Map<String, Integer>> end = freshList(truth, prefix);
        boolean exact = awaitExact(recorders, watchers, end, 30);
        double convergeMillis = (System.nanoTime() - doneAt) / 1e6;
        int etcdWatches = DiscoveryStats.openEtcdWatches();
        int keys = countKeys(truth, prefix);
        // etcd must hold each registration's last weight set: a failed setWeight is remembered and
        // written by the next registration (ServiceRegistration#setWeight), so the last one issued.
        int[] lastSet = new int[n];
        int[] lastAcked = new int[n];
        Arrays.fill(lastSet, 100);
        Arrays.fill(lastAcked, 100);
        for (long[] c : changes) {
          int i = (int) c[0];
          lastSet[i] = Math.max(lastSet[i], (int) c[1]);
          if (c[3] != 0) {
            lastAcked[i] = Math.max(lastAcked[i], (int) c[1]);
          }
        }
        int wrong = 0;
        int behindAck = 0;
        int believedWrong = 0;
        List<String> examples = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          Integer inEtcd = end.getOrDefault(LoadHeldAgent.service(prefix, i, services), Map.of())
              .get(LoadHeldAgent.address(i));
          int have = inEtcd == null ? -1 : inEtcd;
          if (have != lastSet[i]) {
            wrong++;
            behindAck += have < lastAcked[i] ? 1 : 0;
            believedWrong += believed[i] != have ? 1 : 0;
            if (examples.size() < 5) {
              examples.add(String.format(Locale.ROOT, "#%d etcd %d, last set %d, last acked %d, registration says %d",
                  i, have, lastSet[i], lastAcked[i], believed[i]));
            }
          }
        }
        if (wrong > 0) {
          System.out.printf(Locale.ROOT,
              "   etcd does not hold the last weight set for %d registrations (%d behind an acknowledged"
                  + " change; %d where the registration believes otherwise), e.g. %s%n",
              wrong, behindAck, believedWrong, examples);
        }

        // Propagation: for each acknowledged change and each watcher of its service, the first
        // snapshot holding that weight or a later one.
        List<Long> fromAck = new ArrayList<>();
        List<Long> fromIssue = new ArrayList<>();
        int unseen = 0;
        int acknowledged = 0;
        for (long[] c : changes) {
          int i = (int) c[0];
          if (c[3] == 0) {
            continue;
          }
          acknowledged++;
          for (int w = i % services; w < watcherCount; w += services) {
            long seen = recorders.get(w).firstSeen(LoadHeldAgent.address(i), (int) c[1]);
            if (seen == 0) {
              unseen++;
            } else {
              fromAck.add(seen - c[3]);
              fromIssue.add(seen - c[2]);
            }
          }
        }
        List<Long> issueToAck = new ArrayList<>();
        for (long[] c : changes) {
          if (c[3] != 0) {
            issueToAck.add(c[3] - c[2]);
          }
        }
        long[] acks = sorted(issueToAck);
        long[] ack = sorted(fromAck);
        long[] issue = sorted(fromIssue);
        int failed = Integer.parseInt(failedLine.split(" ")[1]);
        System.out.printf(Locale.ROOT,
            "   %d changes acknowledged (%d failed), %d (change, watcher) pairs, %d never seen;"
                + " ack -> watcher p50 %.1f ms p99 %.1f ms max %.1f ms; issued -> watcher p50 %.1f ms p99 %.1f ms;"
                + " issued -> acked (setWeight's future, in the agent JVM) p50 %.1f ms p99 %.1f ms%n",
            acknowledged, failed, ack.length, unseen, ms(pct(ack, 50)), ms(pct(ack, 99)),
            ms(ack.length == 0 ? 0 : ack[ack.length - 1]), ms(pct(issue, 50)), ms(pct(issue, 99)),
            ms(pct(acks, 50)), ms(pct(acks, 99)));
        System.out.printf(Locale.ROOT,
            "   views exact: %s (%.0f ms after the last ack); keys in etcd %d of %d; last weights wrong %d;"
                + " etcd watches of this JVM %d%n   agent JVM: %s%n   client JVM: %d threads, %.1f%% of a core%n",
            exact, convergeMillis, keys, n, wrong, etcdWatches, stats,
            ManagementFactory.getThreadMXBean().getThreadCount(), clientCpuPercent);
        return new Result(mode, ms(pct(ack, 50)), ms(pct(ack, 99)), ms(ack.length == 0 ? 0 : ack[ack.length - 1]),
            ms(pct(issue, 50)), ms(pct(issue, 99)), acknowledged, failed, unseen, convergeMillis,
            exact, keys, wrong, stats, ManagementFactory.getThreadMXBean().getThreadCount(), clientCpuPercent,
            etcdWatches);
      } finally {
        watchers.forEach(ServiceWatcher::close);
      }
    } finally {
      try {
        toAgent.write("EXIT\n");
        toAgent.flush();
      } catch (IOException ignored) {
        // already gone
      }
      if (!agent.waitFor(60, TimeUnit.SECONDS)) {
        agent.destroyForcibly();
      }
    }
  }

  private static Process startAgent(String endpoint, String prefix, int n, int services, int rate, int seconds,
      int ttl, String lease) throws IOException {
    Path java = Paths.get(System.getProperty("java.home"), "bin", "java");
    List<String> cmd = List.of(java.toString(), "-Xmx1g",
        "-Dlogback.configurationFile=agent-bench-logback.xml",
        "-cp", System.getProperty("java.class.path"), LoadHeldAgent.class.getName(),
        "--endpoints", endpoint, "--service-prefix", prefix, "--registrations", Integer.toString(n),
        "--services", Integer.toString(services), "--rate", Integer.toString(rate),
        "--seconds", Integer.toString(seconds), "--ttl", Integer.toString(ttl), "--lease", lease);
    return new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
  }

  /** The views of one watcher: each instance's weights in the order they appeared, with when. */
  static final class Recorder {
    final String service;
    private final Map<String, List<long[]>> seen = new HashMap<>();
    private final Map<String, Integer> last = new HashMap<>();

    Recorder(String service) {
      this.service = service;
    }

    synchronized void onSnapshot(Snapshot s) {
      long now = System.nanoTime();
      for (ServiceInstance i : s.instances()) {
        Integer before = last.put(i.address(), i.weight());
        if (before == null || before != i.weight()) {
          seen.computeIfAbsent(i.address(), a -> new ArrayList<>()).add(new long[] {i.weight(), now});
        }
      }
    }

    /** When this watcher first held {@code address} at {@code weight} or more; 0 if never. */
    synchronized long firstSeen(String address, int weight) {
      for (long[] o : seen.getOrDefault(address, List.of())) {
        if (o[0] >= weight) {
          return o[1];
        }
      }
      return 0;
    }
  }

  /** Waits up to {@code seconds} for every watcher's view to equal {@code truth}; whether it did. */
  private static boolean awaitExact(List<Recorder> recorders, List<ServiceWatcher> watchers,
      Map<String, Map<String, Integer>> truth, int seconds) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    List<String> differ = List.of();
    while (System.nanoTime() < deadline) {
      differ = new ArrayList<>();
      for (int w = 0; w < watchers.size(); w++) {
        String service = recorders.get(w).service;
        if (!view(watchers.get(w).current()).equals(truth.getOrDefault(service, Map.of()))) {
          differ.add("watcher " + w + " (" + service + ")");
        }
      }
      if (differ.isEmpty()) {
        return true;
      }
      Thread.sleep(10); // a harness polling for convergence, bounded by the deadline
    }
    System.out.println("   views differ from etcd's after " + seconds + " s: " + differ);
    return false;
  }

  /** A watcher's current view, address to weight; empty before its first snapshot. */
  private static Map<String, Integer> view(@Nullable Snapshot s) {
    Map<String, Integer> m = new TreeMap<>();
    if (s == null) {
      return m;
    }
    for (ServiceInstance i : s.instances()) {
      m.put(i.address(), i.weight());
    }
    return m;
  }

  /** Every instance under {@code /services/<prefix>-}, per service, read with one range request. */
  static Map<String, Map<String, Integer>> freshList(Client etcd, String prefix) throws Exception {
    KeyLayout layout = KeyLayout.defaults();
    String root = layout.registryPrefix();
    List<KeyValue> kvs = etcd.getKVClient()
        .get(bytes(root + prefix + "-"), GetOption.builder().isPrefix(true).build())
        .get(30, TimeUnit.SECONDS).getKvs();
    Map<String, Map<String, Integer>> out = new TreeMap<>();
    for (KeyValue kv : kvs) {
      String service = layout.serviceOf(kv.getKey().toString(StandardCharsets.UTF_8)).orElse(null);
      if (service != null
          && ValueCodec.decode(kv.getValue().getBytes()) instanceof DecodedValue.Accepted a) {
        out.computeIfAbsent(service, s -> new TreeMap<>()).put(a.address(), a.weight());
      }
    }
    return out;
  }

  static int countKeys(Client etcd, String prefix) throws Exception {
    return (int) etcd.getKVClient()
        .get(bytes(KeyLayout.defaults().prefix() + "/" + prefix + "-"),
            GetOption.builder().isPrefix(true).withCountOnly(true).build())
        .get(30, TimeUnit.SECONDS).getCount();
  }

  private static String expect(BufferedReader in, String word) throws IOException {
    for (String line; (line = in.readLine()) != null; ) {
      if (line.startsWith(word)) {
        return line;
      }
    }
    throw new IllegalStateException("the agent JVM ended before " + word);
  }

  private static long[] sorted(List<Long> values) {
    long[] a = values.stream().mapToLong(Long::longValue).toArray();
    Arrays.sort(a);
    return a;
  }

  static long pct(long[] sorted, int p) {
    if (sorted.length == 0) {
      return 0;
    }
    int i = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
  }

  private static double ms(long nanos) {
    return nanos / 1e6;
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
