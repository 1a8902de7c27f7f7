package io.steelyard.benchmarks.zones;

import io.grpc.CallOptions;
import io.grpc.EquivalentAddressGroup;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.steelyard.benchmarks.CallRecorder;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.registry.Localities;
import io.steelyard.testkit.grpc.CapacityBackend;
import io.steelyard.testkit.grpc.StaticResolverProvider;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The two-zone scenario of the capacity benchmark: zones a and b of three capacity-modelled
 * servers each (2, 4 and 6 workers, registered with those weights and their zone), every caller
 * in zone a, and a call that crosses to zone b pays {@value #CROSS_ZONE_MILLIS} ms more (its
 * request reaches the server that much later). Open-loop Poisson load at a share of zone a's
 * capacity; each weighted policy zone-blind ({@code zoneRouting.enabled: false}) and with the
 * caller in zone a. Cases: (i) 40 % and (ii) 90 % of zone a's capacity, (iii) 40 % while zone
 * a's largest server is lost a third into the measured period (its server stops: calls in flight
 * on it fail, new connections are refused). Prints one Markdown table (also written to {@code
 * benchmarks/target/zones/results.md}).
 *
 * <pre>
 * scripts/bench-zones                      # every case, about 4 minutes
 * scripts/bench-zones --measured 10s --cases ii
 * </pre>
 */
public final class TwoZoneBench {

  static final long CROSS_ZONE_MILLIS = 5;
  static final int[] WORKERS = {2, 4, 6, 2, 4, 6};
  static final String[] ZONES = {"a", "a", "a", "b", "b", "b"};
  static final int ZONE_A_WORKERS = 12;
  static final int LARGEST_A = 2;
  static final List<String> POLICIES =
      List.of("weighted_random", "weighted_round_robin_static", "weighted_least_request");

  record Case(String id, String title, double load, boolean loseLargest) {}

  static final List<Case> CASES =
      List.of(
          new Case("i", "40 % of zone a's capacity", 0.4, false),
          new Case("ii", "90 % of zone a's capacity", 0.9, false),
          new Case("iii", "40 %, zone a's largest server lost", 0.4, true));

  record Result(
      Case c, String policy, boolean zoned, double crossShare, double p50, double p99,
      int failed, int calls, double loadAverage) {}

  private final Duration serviceTime = Duration.ofMillis(50);
  private final Duration deadline = Duration.ofMillis(750);
  private Duration warmup = Duration.ofSeconds(2);
  private Duration measured = Duration.ofSeconds(6);
  private final ScheduledExecutorService replies =
      Executors.newScheduledThreadPool(2, daemon("replies"));

  public static void main(String[] args) throws Exception {
    TwoZoneBench bench = new TwoZoneBench();
    List<Case> cases = CASES;
    for (int i = 0; i + 1 < args.length; i += 2) {
      switch (args[i]) {
        case "--measured" -> bench.measured = seconds(args[i + 1]);
        case "--warmup" -> bench.warmup = seconds(args[i + 1]);
        case "--cases" -> {
          List<String> ids = Arrays.asList(args[i + 1].split(","));
          cases = CASES.stream().filter(c -> ids.contains(c.id())).toList();
        }
        default -> {
          System.err.println("bench-zones: unknown argument " + args[i]);
          System.exit(2);
        }
      }
    }
    if (args.length % 2 != 0) {
      System.err.println("bench-zones: missing value for " + args[args.length - 1]);
      System.exit(2);
    }
    System.out.printf(Locale.ROOT,
        "two-zone benchmark: service time 50 ms, deadline 750 ms, +%d ms across zones, warm-up %d s"
            + " + measured %d s per run, started %s%n",
        CROSS_ZONE_MILLIS, bench.warmup.toSeconds(), bench.measured.toSeconds(), Instant.now());
    List<Result> results = new ArrayList<>();
    try (StaticResolverProvider resolver = StaticResolverProvider.register("zones")) {
      bench.run(resolver, CASES.get(0), POLICIES.get(0), false, -1); // JIT warm-up, not reported
      int index = 0;
      for (Case c : cases) {
        for (String policy : POLICIES) {
          for (boolean zoned : new boolean[] {false, true}) {
            Result r = bench.run(resolver, c, policy, zoned, index++);
            results.add(r);
            System.out.printf(Locale.ROOT,
                "  (%s) %-28s %-10s cross-zone %5.1f %%  p50 %6.1f  p99 %6.1f ms  failed %4d/%d"
                    + "  (load average %.1f)%n",
                c.id(), policy, zoned ? "zone a" : "zone-blind", r.crossShare() * 100, r.p50(),
                r.p99(), r.failed(), r.calls(), r.loadAverage());
          }
        }
      }
    } finally {
      bench.replies.shutdownNow();
    }
    String table = table(results);
    Path out = Path.of("benchmarks/target/zones");
    Files.createDirectories(out);
    Files.writeString(out.resolve("results.md"), table);
    System.out.println();
    System.out.println(table);
  }

  static String table(List<Result> results) {
    StringBuilder sb = new StringBuilder();
    sb.append("| case | policy | routing | cross-zone % | p50 ms | p99 ms | failed | p99 / zone-blind |\n");
    sb.append("|---|---|---|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < results.size(); i++) {
      Result r = results.get(i);
      Result blind = r.zoned() ? results.get(i - 1) : r;
      sb.append(String.format(Locale.ROOT, "| (%s) %s | %s | %s | %.1f | %.1f | %.1f | %d / %d | %s |\n",
          r.c().id(), r.c().title(), r.policy(), r.zoned() ? "zone a" : "zone-blind",
          r.crossShare() * 100, r.p50(), r.p99(), r.failed(), r.calls(),
          r.zoned() ? String.format(Locale.ROOT, "%.2f", r.p99() / blind.p99()) : ""));
    }
    return sb.toString();
  }

  Result run(StaticResolverProvider resolver, Case c, String policy, boolean zoned, int index)
      throws Exception {
    List<CapacityBackend> backends = new ArrayList<>();
    List<Server> servers = new ArrayList<>();
    List<EquivalentAddressGroup> endpoints = new ArrayList<>();
    long seed = 31L * c.id().hashCode() + 17;
    try {
      for (int i = 0; i < WORKERS.length; i++) {
        CapacityBackend backend =
            new CapacityBackend("s" + i, WORKERS[i], serviceTime, replies, new Random(seed + i));
        var service = backend.service();
        if (ZONES[i].equals("b")) {
          service = ServerInterceptors.intercept(service, new CrossZoneDelay(replies));
        }
        Server server =
            NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
                .directExecutor()
                .addService(service)
                .build()
                .start();
        backends.add(backend);
        servers.add(server);
        endpoints.add(
            EndpointWeights.withWeight(
                new EquivalentAddressGroup(
                    new InetSocketAddress(InetAddress.getLoopbackAddress(), server.getPort())),
                WORKERS[i],
                Map.of(Localities.ZONE_KEY, ZONES[i])));
      }
      Map<String, ?> zoneRouting =
          zoned ? Map.of("zone", "a") : Map.of("enabled", false);
      ManagedChannel channel =
          Grpc.newChannelBuilder(
                  resolver.target("run-" + index, endpoints), InsecureChannelCredentials.create())
              .defaultServiceConfig(
                  Map.of("loadBalancingConfig",
                      List.of(Map.of(policy, Map.of("zoneRouting", zoneRouting)))))
              .directExecutor()
              .build();
      try {
        ClientCalls.blockingUnaryCall(
            channel, CapacityBackend.METHOD,
            CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS), "");
        return measure(c, policy, zoned, channel, backends, servers, seed);
      } finally {
        channel.shutdownNow();
        channel.awaitTermination(5, TimeUnit.SECONDS);
      }
    } finally {
      for (Server s : servers) {
        s.shutdownNow();
      }
      for (Server s : servers) {
        s.awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }

  private Result measure(
      Case c, String policy, boolean zoned, ManagedChannel channel,
      List<CapacityBackend> backends, List<Server> servers, long seed)
      throws InterruptedException {
    double rate = c.load() * ZONE_A_WORKERS / (serviceTime.toNanos() / 1e9);
    long warmupNanos = warmup.toNanos();
    long measuredNanos = measured.toNanos();
    Random random = new Random(seed);
    List<Long> offsetList = new ArrayList<>();
    for (double t = -warmupNanos; ; ) {
      t += -Math.log(1 - random.nextDouble()) / rate * 1e9;
      if (t >= measuredNanos) {
        break;
      }
      offsetList.add((long) t);
    }
    int total = offsetList.size();
    CallRecorder calls = new CallRecorder(total);
    long start = System.nanoTime() + warmupNanos;
    long[] arrivalsAtStart = new long[backends.size()];
    boolean startMarked = false;
    boolean lost = false;
    for (int i = 0; i < total; i++) {
      long offset = offsetList.get(i);
      long due = start + offset;
      long wait;
      while ((wait = due - System.nanoTime()) > 0) {
        LockSupport.parkNanos(wait);
      }
      if (!startMarked && offset >= 0) {
        startMarked = true;
        for (int s = 0; s < backends.size(); s++) {
          arrivalsAtStart[s] = backends.get(s).arrivals();
        }
      }
      if (c.loseLargest() && !lost && offset >= measuredNanos / 3) {
        lost = true;
        servers.get(LARGEST_A).shutdownNow();
      }
      calls.send(channel, i, due, deadline.toNanos());
    }
    long giveUp = System.nanoTime() + deadline.toNanos() + TimeUnit.SECONDS.toNanos(5);
    calls.awaitAll(giveUp);
    long local = 0;
    long remote = 0;
    for (int s = 0; s < backends.size(); s++) {
      long n = backends.get(s).arrivals() - arrivalsAtStart[s];
      if (ZONES[s].equals("a")) {
        local += n;
      } else {
        remote += n;
      }
    }
    int first = 0;
    while (first < total && offsetList.get(first) < 0) {
      first++;
    }
    long[] latency = calls.latency();
    boolean[] failed = calls.failed();
    long[] measuredLatency = new long[total - first];
    int failures = 0;
    for (int i = first; i < total; i++) {
      measuredLatency[i - first] = latency[i] == 0 ? deadline.toNanos() : latency[i];
      failures += failed[i] || latency[i] == 0 ? 1 : 0;
    }
    Arrays.sort(measuredLatency);
    return new Result(
        c, policy, zoned, remote / (double) Math.max(1, local + remote),
        percentile(measuredLatency, 0.50), percentile(measuredLatency, 0.99),
        failures, measuredLatency.length, loadAverage());
  }

  private static double percentile(long[] sorted, double q) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    return sorted[(int) Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] / 1e6;
  }

  private static double loadAverage() {
    try {
      return Double.parseDouble(Files.readString(Path.of("/proc/loadavg")).split(" ")[0]);
    } catch (IOException | RuntimeException e) {
      return Double.NaN;
    }
  }

  private static Duration seconds(String text) {
    if (!text.matches("[0-9]+s")) {
      System.err.println("bench-zones: duration " + text + " (expected: e.g. 6s)");
      System.exit(2);
    }
    return Duration.ofSeconds(Long.parseLong(text.substring(0, text.length() - 1)));
  }

  private static java.util.concurrent.ThreadFactory daemon(String name) {
    return r -> {
      Thread t = new Thread(r, "zones-" + name);
      t.setDaemon(true);
      return t;
    };
  }

  /**
   * The extra distance of a call to another zone: the request reaches the server {@value
   * #CROSS_ZONE_MILLIS} ms after it was sent, so the call takes that much longer without holding
   * a worker for it.
   */
  private static final class CrossZoneDelay implements ServerInterceptor {
    private final ScheduledExecutorService scheduler;

    CrossZoneDelay(ScheduledExecutorService scheduler) {
      this.scheduler = scheduler;
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(
        ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
      return new SimpleForwardingServerCallListener<>(next.startCall(call, headers)) {
        @Override
        public void onHalfClose() {
          scheduler.schedule(super::onHalfClose, CROSS_ZONE_MILLIS, TimeUnit.MILLISECONDS);
        }
      };
    }
  }
}
