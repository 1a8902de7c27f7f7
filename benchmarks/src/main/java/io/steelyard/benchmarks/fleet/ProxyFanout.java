package io.steelyard.benchmarks.fleet;

import static io.steelyard.benchmarks.BenchArgs.intArg;
import static io.steelyard.benchmarks.BenchArgs.stringArg;
import static io.steelyard.benchmarks.HostStats.loadAverage;
import static io.steelyard.benchmarks.HostStats.rssKb;
import static io.steelyard.benchmarks.HostStats.threads;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.steelyard.discovery.ServiceWatcher;
import io.steelyard.discovery.Snapshot;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.EtcdGrpcProxy;
import io.steelyard.testkit.EtcdMember;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Clients per proxy: what N independent clients watching one service cost etcd, directly and
 * through one {@code etcd grpc-proxy}, and how long one weight change takes to reach all of them.
 * A plain harness, not JMH: each figure is a count or a distribution over real etcd round trips.
 *
 * <p>One etcd member (testkit, binary backend), a fresh one (and a fresh proxy) per run. The
 * service has {@code --instances} keys written directly. Then {@code N} clients, each a {@link ServiceWatcher} on its <em>own</em> {@link
 * EtcdConnection}: the process shares one etcd client and one watch per connection, so each
 * client is given a connection of its own (the connect timeout 5 s + i ms, the only difference),
 * and so has its own jetcd {@code Client} (its own gRPC channel, TCP connection, Vert.x instance
 * and executor) and its own etcd watch stream, as N separate processes would. What differs from
 * N processes: they share this JVM's heap, its JIT and one discovery thread that delivers every
 * snapshot (so a change reaches the N listeners one after the other), and they share the
 * machine's 2 cores as N processes would.
 *
 * <p>Reported per run, after every client holds the full list: etcd's own counts (its {@code
 * /metrics}) of watch streams ({@code etcd_debugging_mvcc_watch_stream_total}), watchers ({@code
 * etcd_debugging_mvcc_watcher_total}), goroutines, resident and Go-heap memory, and its
 * established TCP connections (from {@code /proc/net/tcp}), each as the increase over the moment
 * before the clients opened; the proxy's resident memory and threads ({@code /proc/PID/status});
 * this JVM's heap after GC, resident memory and threads per client; then {@code --changes}
 * weight changes of one instance, each put directly to etcd and timed from the put issued to the
 * snapshot in each client holding it: p50, p99 and max over the N clients (max: the last client),
 * with the median over the changes of each.
 *
 * <pre>{@code
 * scripts/bench-proxy [--clients 100,500,1000] [--instances 10] [--changes 20]
 *     [--mode direct|proxy|both] [--runs 1]
 * }</pre>
 */
public final class ProxyFanout {

  private static final String ADDRESS = "10.0.0.1:50051";

  private ProxyFanout() {}

  /** One run's figures; etcd's are increases over the moment before the clients opened. */
  record Result(String mode, int clients, double openSeconds, double streams, double watchers,
      double goroutines, double etcdRssMb, double etcdHeapMb, int etcdConnections, double proxyRssMb,
      int proxyThreads, double proxyRssStartMb, double heapKbPerClient, double rssKbPerClient, double threadsPerClient,
      double p50, double p99, double max, double lastMin, double lastMax, int lost) {}

  public static void main(String[] args) throws Exception {
    String mode = stringArg(args, "--mode", "both");
    int instances;
    int changes;
    int runs;
    int[] sizes;
    try {
      instances = intArg(args, "--instances", 10);
      changes = intArg(args, "--changes", 20);
      runs = intArg(args, "--runs", 1);
      sizes = Arrays.stream(stringArg(args, "--clients", "100,500,1000").split(","))
          .map(String::trim).mapToInt(Integer::parseInt).toArray();
    } catch (NumberFormatException e) {
      System.err.println("ProxyFanout: not an integer: " + e.getMessage());
      System.exit(2);
      return;
    }
    if (instances < 1 || changes < 1 || runs < 1 || Arrays.stream(sizes).anyMatch(n -> n < 1)
        || !List.of("direct", "proxy", "both").contains(mode)) {
      System.err.println("ProxyFanout: need --clients N[,N...] >= 1, --instances, --changes, --runs >= 1,"
          + " --mode direct|proxy|both");
      System.exit(2);
    }
    List<Result> results = new ArrayList<>();
    System.out.printf(Locale.ROOT, "etcd 3.4 x 1 (a fresh member per run), java %s, %d cpus, load average %s%n"
            + "a service of %d instances; %d weight changes per run; clients %s%n",
        System.getProperty("java.version"), Runtime.getRuntime().availableProcessors(), loadAverage(), instances,
        changes, Arrays.toString(sizes));
    // Not reported: loads and warms the classes every run uses, so the first run's per-client
    // memory is not the JVM's own start-up.
    freshRun("warm-up", "fanout-warmup", Math.min(20, sizes[0]), instances, 3);
    for (int r = 1; r <= runs; r++) {
      for (int n : sizes) {
        if (!mode.equals("proxy")) {
          results.add(freshRun("direct", "fanout-d" + n + "-" + r, n, instances, changes));
        }
        if (!mode.equals("direct")) {
          results.add(freshRun("proxy", "fanout-p" + n + "-" + r, n, instances, changes));
        }
      }
    }
    System.out.printf(Locale.ROOT, "%n%-6s %6s %6s %7s %8s %6s %8s %8s %5s %13s %6s %8s %8s %6s %7s %7s %7s %13s %4s%n",
        "mode", "N", "open s", "streams", "watchers", "gorout", "etcdRSS", "etcdHeap", "conns", "proxyRSS/start",
        "pThr", "heapKB/c", "rssKB/c", "thr/c", "p50 ms", "p99 ms", "max ms", "last min-max", "lost");
    for (Result r : results) {
      boolean proxied = r.proxyThreads >= 0;
      System.out.printf(Locale.ROOT, "%-6s %6d %6.1f %7.0f %8.0f %6.0f %6.1fMB %6.1fMB %5d %11sMB %6s"
              + " %8.1f %8.1f %6.2f %7.1f %7.1f %7.1f %6.0f-%-6.0f %4d%n",
          r.mode, r.clients, r.openSeconds, r.streams, r.watchers, r.goroutines, r.etcdRssMb, r.etcdHeapMb,
          r.etcdConnections,
          proxied ? String.format(Locale.ROOT, "%.1f/%.1f", r.proxyRssMb, r.proxyRssStartMb) : "-",
          proxied ? Integer.toString(r.proxyThreads) : "-", r.heapKbPerClient, r.rssKbPerClient,
          r.threadsPerClient, r.p50, r.p99, r.max, r.lastMin, r.lastMax, r.lost);
    }
    System.out.printf(Locale.ROOT, "etcd figures: increase over the moment before the clients opened;"
        + " p50/p99/max: medians over the changes; last min-max: the slowest client's time, over the changes%n"
        + "load average at the end %s%n", loadAverage());
    System.exit(results.stream().allMatch(r -> r.lost == 0) ? 0 : 1);
  }

  /** One client: the weight of {@link #ADDRESS} it last saw, and when it first saw each change. */
  static final class Subscriber {
    final long[] seenAt;
    volatile int weight;
    volatile int instances;

    Subscriber(int changes) {
      seenAt = new long[changes];
    }

    /** Called on the discovery thread, one snapshot at a time. */
    void onSnapshot(Snapshot s) {
      long now = System.nanoTime();
      instances = s.instances().size();
      for (ServiceInstance i : s.instances()) {
        if (i.address().equals(ADDRESS)) {
          int w = i.weight();
          for (int c = weight - 1; c < w - 1 && c < seenAt.length; c++) {
            if (c >= 0 && seenAt[c] == 0) {
              seenAt[c] = now; // change c sets weight c + 2
            }
          }
          weight = Math.max(weight, w);
        }
      }
    }
  }

  /** One run on a fresh member (and proxy), so etcd's memory starts from the same point each time. */
  private static Result freshRun(String mode, String service, int n, int instances, int changes)
      throws Exception {
    try (EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build()) {
      etcd.start();
      try (Client truth = EtcdConnection.of(etcd.endpoints()).connect();
          EtcdGrpcProxy proxy = mode.equals("proxy") ? EtcdGrpcProxy.start(etcd) : null) {
        return run(etcd.members().get(0), proxy, truth, mode, service, n, instances, changes);
      }
    }
  }

  private static Result run(EtcdMember member, EtcdGrpcProxy proxy, Client truth, String mode, String service,
      int n, int instances, int changes) throws Exception {
    String endpoint = proxy == null ? member.clientEndpoint().toString() : proxy.endpoint();
    System.out.printf(Locale.ROOT, "-- %s, %d clients, service %s, load average %s%n", mode, n, service,
        loadAverage());
    for (int i = 0; i < instances; i++) {
      String address = "10.0." + (i / 250) + "." + (i % 250 + 1) + ":50051";
      truth.getKVClient().put(bytes("/services/" + service + "/" + address), bytes(address + "|1"))
          .get(10, TimeUnit.SECONDS);
    }
    Before etcd0 = Before.of(member);
    double proxyRss0 = proxy == null ? 0 : rssKb(proxy.pid().orElseThrow()) / 1e3;
    double heap0 = heapAfterGc();
    long rss0 = rssKb(ProcessHandle.current().pid());
    int threads0 = Thread.activeCount();

    long t0 = System.nanoTime();
    List<Subscriber> clients = new ArrayList<>(n);
    List<ServiceWatcher> watchers = new ArrayList<>(n);
    try {
      for (int i = 0; i < n; i++) {
        Subscriber c = new Subscriber(changes);
        clients.add(c);
        EtcdConnection own = EtcdConnection.builder().endpoints(endpoint)
            .connectTimeout(Duration.ofMillis(EtcdConnection.DEFAULT_CONNECT_TIMEOUT_MILLIS + i)).build();
        watchers.add(ServiceWatcher.open(own, KeyLayout.defaults(), service, c::onSnapshot));
      }
      if (!await(() -> clients.stream().allMatch(c -> c.instances == instances), 300)) {
        throw new IllegalStateException("not every client got the full list within 300 s");
      }
      double openSeconds = (System.nanoTime() - t0) / 1e9;
      TimeUnit.SECONDS.sleep(3); // a harness, not a test: let connections and goroutines settle

      double streams = member.metric("etcd_debugging_mvcc_watch_stream_total") - etcd0.streams;
      double etcdWatchers = member.metric("etcd_debugging_mvcc_watcher_total") - etcd0.watchers;
      double goroutines = member.metric("go_goroutines") - etcd0.goroutines;
      double etcdRss = (member.metric("process_resident_memory_bytes") - etcd0.rss) / 1e6;
      double etcdHeap = (member.metric("go_memstats_heap_inuse_bytes") - etcd0.heap) / 1e6;
      int conns = establishedTo(member.clientEndpoint().getPort()) - etcd0.connections;
      double proxyRss = 0;
      int proxyThreads = -1;
      if (proxy != null) {
        long pid = proxy.pid().orElseThrow();
        proxyRss = rssKb(pid) / 1e3;
        proxyThreads = threads(pid);
      }
      double heapPerClient = (heapAfterGc() - heap0) / 1e3 / n;
      double rssPerClient = (double) (rssKb(ProcessHandle.current().pid()) - rss0) / n;
      double threadsPerClient = (double) (Thread.activeCount() - threads0) / n;

      double[] p50 = new double[changes];
      double[] p99 = new double[changes];
      double[] max = new double[changes];
      int lost = 0;
      for (int k = 0; k < changes; k++) {
        int weight = k + 2;
        long issued = System.nanoTime();
        truth.getKVClient().put(bytes("/services/" + service + "/" + ADDRESS), bytes(ADDRESS + "|" + weight))
            .get(10, TimeUnit.SECONDS);
        int change = k;
        if (!await(() -> clients.stream().allMatch(c -> c.seenAt[change] != 0), 60)) {
          lost += (int) clients.stream().filter(c -> c.seenAt[change] == 0).count();
        }
        long[] lat = clients.stream().filter(c -> c.seenAt[change] != 0)
            .mapToLong(c -> c.seenAt[change] - issued).sorted().toArray();
        p50[k] = LoadHeld.pct(lat, 50) / 1e6;
        p99[k] = LoadHeld.pct(lat, 99) / 1e6;
        max[k] = lat.length == 0 ? Double.NaN : lat[lat.length - 1] / 1e6;
        TimeUnit.MILLISECONDS.sleep(200); // independent changes, not a burst
      }
      Result r = new Result(mode, n, openSeconds, streams, etcdWatchers, goroutines, etcdRss, etcdHeap, conns,
          proxyRss, proxyThreads, proxyRss0, heapPerClient, rssPerClient, threadsPerClient, median(p50), median(p99),
          median(max), Arrays.stream(max).min().orElse(0), Arrays.stream(max).max().orElse(0), lost);
      System.out.printf(Locale.ROOT,
          "   open %.1f s; etcd +%.0f streams +%.0f watchers +%.0f goroutines +%.1f MB RSS, +%d connections;"
              + " proxy %.1f MB RSS (%.1f MB before the clients), %d threads;"
              + " client %.1f KB heap, %.1f KB RSS, %.2f threads each;"
              + " to all %d: p50 %.1f p99 %.1f max %.1f ms (medians of %d changes), lost %d%n",
          openSeconds, streams, etcdWatchers, goroutines, etcdRss, conns, proxyRss, proxyRss0, proxyThreads,
          heapPerClient, rssPerClient, threadsPerClient, n, r.p50, r.p99, r.max, changes, lost);
      return r;
    } finally {
      watchers.forEach(ServiceWatcher::close);
      // The next run's client figures start from this JVM without these clients: closing a
      // client ends its threads asynchronously.
      if (!await(() -> Thread.activeCount() <= threads0 + 5, 120)) {
        System.out.printf(Locale.ROOT, "   (%d threads still alive 120 s after closing, %d before opening)%n",
            Thread.activeCount(), threads0);
      }
    }
  }

  /** etcd's figures before the clients open. */
  private record Before(double streams, double watchers, double goroutines, double rss, double heap,
      int connections) {
    static Before of(EtcdMember m) throws IOException {
      return new Before(m.metric("etcd_debugging_mvcc_watch_stream_total"),
          m.metric("etcd_debugging_mvcc_watcher_total"), m.metric("go_goroutines"),
          m.metric("process_resident_memory_bytes"), m.metric("go_memstats_heap_inuse_bytes"),
          establishedTo(m.clientEndpoint().getPort()));
    }
  }

  private interface Check {
    boolean ok() throws Exception;
  }

  /** Polls {@code check} every 1 ms until it holds or {@code seconds} pass. */
  private static boolean await(Check check, int seconds) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (!check.ok()) {
      if (System.nanoTime() > deadline) {
        return false;
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
    }
    return true;
  }

  private static double heapAfterGc() {
    for (int i = 0; i < 3; i++) {
      System.gc();
    }
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }

  /** Established TCP connections whose local port is {@code port}: the server side, etcd's. */
  private static int establishedTo(int port) throws IOException {
    String local = String.format(Locale.ROOT, ":%04X", port);
    int count = 0;
    for (String file : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
      Path p = Path.of(file);
      if (!Files.exists(p)) {
        continue;
      }
      for (String line : Files.readAllLines(p)) {
        String[] f = line.trim().split("\\s+");
        if (f.length > 3 && f[1].endsWith(local) && f[3].equals("01")) {
          count++;
        }
      }
    }
    return count;
  }

  private static double median(double[] values) {
    double[] s = values.clone();
    Arrays.sort(s);
    return s.length == 0 ? Double.NaN : s[(s.length - 1) / 2];
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
