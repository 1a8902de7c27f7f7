package io.steelyard.benchmarks.agent;

import static io.steelyard.benchmarks.BenchArgs.intArg;
import static io.steelyard.benchmarks.BenchArgs.stringArg;
import static io.steelyard.benchmarks.HostStats.loadAverage;

import io.etcd.jetcd.Client;
import io.steelyard.agent.ServiceRegistration;
import io.steelyard.agent.SharedLease;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.EtcdGrpcProxy;
import io.steelyard.testkit.EtcdMember;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * What the registrations of one process cost etcd in keepalives, with a lease each and with one
 * {@link SharedLease}, counted by etcd itself ({@code /metrics} of every member through the
 * testkit): keepalive requests received ({@code grpc_server_msg_received_total} of {@code
 * LeaseKeepAlive}), lease renewals seen by the leader ({@code etcd_debugging_lease_renewed_total}),
 * keepalive streams, etcd's CPU ({@code process_cpu_seconds_total}), and this JVM's CPU and
 * threads. A plain harness, not JMH: each figure is a rate over a steady window against a real
 * etcd.
 *
 * <p>Usage: {@code scripts/bench-keepalive [--registrations N] [--ttl SECONDS] [--window SECONDS]
 * [--members 1|3] [--mode separate|shared|both] [--via direct|proxy|both]}; defaults 1,000
 * registrations, TTL 10 s, a 30 s window, one member, both modes, directly. Every registration of
 * a mode shares one jetcd client (what docs/agent.md recommends for many registrations in a
 * process), so the comparison is leases, not connections. {@code --via proxy} puts one {@code etcd
 * grpc-proxy} (a fresh one per mode) between the registrations and etcd: etcd's counts then show
 * what the proxy forwards, i.e. whether it coalesces keepalives. {@code --gaps} times the answers
 * instead ({@link KeepAliveGaps}).
 */
public final class KeepAliveBench {

  private static final String KEEPALIVE = "LeaseKeepAlive";

  private KeepAliveBench() {}

  public static void main(String[] args) throws Exception {
    if (List.of(args).contains("--gaps")) {
      KeepAliveGaps.main(args);
      System.exit(0);
    }
    int n = intArg(args, "--registrations", 1_000);
    int ttl = intArg(args, "--ttl", 10);
    int window = intArg(args, "--window", 30);
    int members = intArg(args, "--members", 1);
    String mode = stringArg(args, "--mode", "both");
    String via = stringArg(args, "--via", "direct");
    if (!List.of("separate", "shared", "both").contains(mode) || !List.of("direct", "proxy", "both").contains(via)) {
      System.err.println("KeepAliveBench: --mode separate|shared|both, --via direct|proxy|both");
      System.exit(2);
    }
    try (EtcdCluster etcd =
        EtcdCluster.builder().members(members).backend(EtcdCluster.Backend.BINARY).build()) {
      etcd.start();
      System.out.printf(Locale.ROOT,
          "etcd 3.4 x %d at %s, java %s, %d cpus, load average %s; %d registrations, TTL %d s, window %d s%n",
          members, etcd.endpoints(), System.getProperty("java.version"),
          Runtime.getRuntime().availableProcessors(), loadAverage(), n, ttl, window);
      System.out.printf(Locale.ROOT, "%-16s %12s %12s %8s %8s %10s %10s %8s %10s %10s%n",
          "mode", "keepalive/s", "renewals/s", "streams", "leases", "etcd cpu%", "agent cpu%",
          "threads", "register s", "close s");
      for (String how : via.equals("both") ? List.of("direct", "proxy") : List.of(via)) {
        Result separate = null;
        Result shared = null;
        if (!mode.equals("shared")) {
          separate = run(etcd, how, n, ttl, window, false);
        }
        if (!mode.equals("separate")) {
          shared = run(etcd, how, n, ttl, window, true);
        }
        if (separate != null && shared != null && shared.keepalivesPerSecond > 0) {
          System.out.printf(Locale.ROOT,
              "%s, separate / shared: %.0fx the keepalive requests, %.1fx etcd's CPU%n", how,
              separate.keepalivesPerSecond / shared.keepalivesPerSecond,
              shared.etcdCpuPercent > 0 ? separate.etcdCpuPercent / shared.etcdCpuPercent : Double.NaN);
        }
      }
      System.out.printf(Locale.ROOT, "load average at the end %s%n", loadAverage());
    }
    System.exit(0);
  }

  private record Result(double keepalivesPerSecond, double etcdCpuPercent) {}

  private static Result run(EtcdCluster etcd, String via, int n, int ttl, int window, boolean share)
      throws Exception {
    String service = (share ? "bench-shared-" : "bench-separate-") + via;
    try (EtcdGrpcProxy proxy = via.equals("proxy") ? EtcdGrpcProxy.start(etcd) : null;
        Client client = EtcdConnection.of(proxy != null ? proxy.endpoint() : etcd.endpoints()).connect()) {
      SharedLease lease =
          share ? SharedLease.builder(client).ttl(Duration.ofSeconds(ttl)).build() : null;
      List<ServiceRegistration> regs = new ArrayList<>(n);
      double leasesBefore = leaderMetric(etcd, "etcd_debugging_lease_granted_total");
      double streamsBefore = sum(etcd, "grpc_server_started_total", "grpc_method", KEEPALIVE);
      long t0 = System.nanoTime();
      for (int i = 0; i < n; i++) {
        String address = "10.1." + (i / 250) + "." + (i % 250 + 1) + ":50051";
        regs.add(
            (share
                    ? ServiceRegistration.builder(lease, service, address)
                    : ServiceRegistration.builder(client, service, address).ttl(Duration.ofSeconds(ttl)))
                .build());
      }
      CompletableFuture.allOf(regs.stream().map(ServiceRegistration::start).toArray(CompletableFuture<?>[]::new))
          .get(5, TimeUnit.MINUTES);
      double registerSeconds = (System.nanoTime() - t0) / 1e9;
      // One TTL to settle: every lease sends its first keepalive at once, then every TTL/3.
      Thread.sleep(TimeUnit.SECONDS.toMillis(ttl));

      double received0 = sum(etcd, "grpc_server_msg_received_total", "grpc_method", KEEPALIVE);
      double renewed0 = leaderMetric(etcd, "etcd_debugging_lease_renewed_total");
      double etcdCpu0 = sum(etcd, "process_cpu_seconds_total");
      long agentCpu0 = processCpuNanos();
      long w0 = System.nanoTime();
      Thread.sleep(TimeUnit.SECONDS.toMillis(window));
      double seconds = (System.nanoTime() - w0) / 1e9;
      double received = sum(etcd, "grpc_server_msg_received_total", "grpc_method", KEEPALIVE) - received0;
      double renewed = leaderMetric(etcd, "etcd_debugging_lease_renewed_total") - renewed0;
      double etcdCpu = sum(etcd, "process_cpu_seconds_total") - etcdCpu0;
      double agentCpu = (processCpuNanos() - agentCpu0) / 1e9;
      double streams = sum(etcd, "grpc_server_started_total", "grpc_method", KEEPALIVE) - streamsBefore;
      double leases = leaderMetric(etcd, "etcd_debugging_lease_granted_total") - leasesBefore;
      int threads = Thread.activeCount();

      long c0 = System.nanoTime();
      ExecutorService closers = Executors.newFixedThreadPool(32);
      CompletableFuture.allOf(
              regs.stream().map(r -> CompletableFuture.runAsync(r::close, closers)).toArray(CompletableFuture<?>[]::new))
          .get(5, TimeUnit.MINUTES);
      closers.shutdown();
      if (lease != null) {
        lease.close();
      }
      double closeSeconds = (System.nanoTime() - c0) / 1e9;
      Result r = new Result(received / seconds, 100 * etcdCpu / seconds);
      System.out.printf(Locale.ROOT, "%-16s %12.1f %12.1f %8.0f %8.0f %10.1f %10.1f %8d %10.1f %10.1f%n",
          (share ? "shared" : "separate") + ", " + via, r.keepalivesPerSecond, renewed / seconds, streams, leases,
          r.etcdCpuPercent, 100 * agentCpu / seconds, threads, registerSeconds, closeSeconds);
      return r;
    }
  }

  private static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
  }

  /** A counter summed over every member (each counts what it received itself). */
  private static double sum(EtcdCluster etcd, String name, String... labels) {
    double total = 0;
    for (EtcdMember m : etcd.members()) {
      total += m.metric(name, labels);
    }
    return total;
  }

  /** Renewals are counted by the leader alone; grants by every member that applies them. */
  private static double leaderMetric(EtcdCluster etcd, String name) {
    return etcd.leader().metric(name);
  }
}
