package io.steelyard.benchmarks.discovery;

import static io.steelyard.benchmarks.BenchArgs.intArg;
import static io.steelyard.benchmarks.BenchArgs.stringArg;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.LoadBalancer;
import io.grpc.LoadBalancerProvider;
import io.grpc.LoadBalancerRegistry;
import io.grpc.ManagedChannel;
import io.grpc.NameResolver.ConfigOrError;
import io.grpc.Status;
import io.steelyard.benchmarks.HostStats;
import io.steelyard.discovery.EtcdNameResolverProvider;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * How long a service config change in etcd takes to reach every client: {@code steelyard config
 * set} is a put of {@code <prefix>/.config/<service>}; this bench puts a config naming a probe
 * policy with a sequence number, N times, and records when each of the channels' balancers is
 * handed it (grpc parsed it and switched the balancer's config). Reports p50/p99/max per channel
 * and of the slowest channel per change ("every client").
 *
 * <p>{@code --clients separate} (default) gives every channel its own etcd client and watch, as
 * that many client processes would; {@code shared} lets them share one watch, as the channels of
 * one process do.
 *
 * <p>{@code ConfigPropagationBench [--channels 50] [--changes 200] [--gap-ms 50]
 * [--clients separate|shared] [--instances 1] [--endpoints URLS]}; without {@code --endpoints} a local etcd is
 * started with the testkit. {@code scripts/bench-config} runs it.
 */
public final class ConfigPropagationBench {

  private static final String POLICY = "config_probe";
  private static final String SERVICE = "bench-config";

  /** Per channel: the last sequence number handed to its balancer. */
  private static AtomicLongArray seen;
  /** Per channel: when the current change reached it (System.nanoTime). */
  private static AtomicLongArray arrivedAt;

  private ConfigPropagationBench() {}

  public static void main(String[] args) throws Exception {
    int channels = intArg(args, "--channels", 50);
    int changes = intArg(args, "--changes", 200);
    int gapMillis = intArg(args, "--gap-ms", 50);
    int instances = intArg(args, "--instances", 1);
    boolean separate = !"shared".equals(stringArg(args, "--clients", "separate"));
    String endpoints = stringArg(args, "--endpoints", null);
    EtcdCluster local = null;
    if (endpoints == null) {
      local = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();
      local.start();
      endpoints = local.endpoints();
    }
    seen = new AtomicLongArray(channels);
    arrivedAt = new AtomicLongArray(channels);
    for (int i = 0; i < channels; i++) {
      seen.set(i, -1);
    }
    LoadBalancerRegistry.getDefaultRegistry().register(new ProbeProvider());
    List<ManagedChannel> open = new ArrayList<>();
    try (Client writer = EtcdConnection.of(endpoints).connect()) {
      System.out.printf(Locale.ROOT,
          "etcd %s, java %s, %d cpus, %d channels (%s), %d instances%n",
          endpoints, System.getProperty("java.version"), Runtime.getRuntime().availableProcessors(),
          channels, separate ? "an etcd client and watch each" : "one shared etcd client and watch",
          instances);
      register(writer, instances);
      put(writer, "/services/.config/" + SERVICE, config(0));
      for (int i = 0; i < channels; i++) {
        // Distinct connect timeouts make distinct connections: one client and watch each.
        EtcdConnection conn = EtcdConnection.builder()
            .endpoints(endpoints)
            .connectTimeout(Duration.ofMillis(separate ? 5_000 + i : 5_000))
            .build();
        ManagedChannel ch = Grpc.newChannelBuilder("etcd:///" + SERVICE, InsecureChannelCredentials.create())
            .setNameResolverArg(EtcdNameResolverProvider.CONNECTION, conn)
            .setNameResolverArg(ProbeProvider.INDEX, i)
            .build();
        ch.getState(true); // resolve now; the probe policy never connects
        open.add(ch);
      }
      waitForAll(0, Duration.ofSeconds(60));
      System.out.printf(Locale.ROOT, "all %d channels hold config 0; %d changes, %d ms apart%n",
          channels, changes, gapMillis);
      double[] perChannel = new double[channels * changes];
      double[] slowest = new double[changes];
      for (int c = 1; c <= changes; c++) {
        long t0 = System.nanoTime();
        put(writer, "/services/.config/" + SERVICE, config(c));
        waitForAll(c, Duration.ofSeconds(30));
        double max = 0;
        for (int i = 0; i < channels; i++) {
          double ms = (arrivedAt.get(i) - t0) / 1e6;
          perChannel[(c - 1) * channels + i] = ms;
          max = Math.max(max, ms);
        }
        slowest[c - 1] = max;
        Thread.sleep(gapMillis); // a benchmark pacing its writes, not a test waiting
      }
      Arrays.sort(perChannel);
      Arrays.sort(slowest);
      System.out.printf(Locale.ROOT,
          "put -> balancer of each channel: p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d samples)%n",
          pct(perChannel, 50), pct(perChannel, 99), perChannel[perChannel.length - 1], perChannel.length);
      System.out.printf(Locale.ROOT,
          "put -> every channel (slowest per change): p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d changes)%n",
          pct(slowest, 50), pct(slowest, 99), slowest[slowest.length - 1], slowest.length);
      System.out.println("load average " + HostStats.loadAverage());
    } finally {
      for (ManagedChannel ch : open) {
        ch.shutdownNow();
      }
      if (local != null) {
        local.close();
      }
    }
    System.exit(0);
  }

  /** {@code n} instances of the service, 10.x.y.z:50051 weight 1, in transactions of 128 puts. */
  private static void register(Client c, int n) throws Exception {
    List<io.etcd.jetcd.op.Op> ops = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      String addr = "10." + (i >> 16 & 255) + "." + (i >> 8 & 255) + "." + (i & 255) + ":50051";
      ops.add(io.etcd.jetcd.op.Op.put(
          ByteSequence.from("/services/" + SERVICE + "/" + addr, StandardCharsets.UTF_8),
          ByteSequence.from(addr + "|1", StandardCharsets.UTF_8),
          io.etcd.jetcd.options.PutOption.DEFAULT));
      if (ops.size() == 128 || i == n - 1) {
        c.getKVClient().txn().Then(ops.toArray(io.etcd.jetcd.op.Op[]::new)).commit().get(30, TimeUnit.SECONDS);
        ops.clear();
      }
    }
  }

  private static String config(long seq) {
    return "{\"loadBalancingConfig\":[{\"" + POLICY + "\":{\"seq\":" + seq + "}}]}";
  }

  private static void waitForAll(long seq, Duration max) throws InterruptedException {
    long deadline = System.nanoTime() + max.toNanos();
    for (int i = 0; i < seen.length(); i++) {
      while (seen.get(i) < seq) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("channel " + i + " never got config " + seq);
        }
        Thread.onSpinWait();
      }
    }
  }

  private static double pct(double[] sorted, double p) {
    int i = (int) Math.ceil(p / 100 * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
  }

  private static void put(Client c, String key, String value) throws Exception {
    c.getKVClient()
        .put(ByteSequence.from(key, StandardCharsets.UTF_8), ByteSequence.from(value, StandardCharsets.UTF_8))
        .get(10, TimeUnit.SECONDS);
  }

  /**
   * A policy that connects nothing: its config is a sequence number, and its balancer records
   * when a new one arrives for its channel (the channel's index is a resolver argument).
   */
  private static final class ProbeProvider extends LoadBalancerProvider {
    static final io.grpc.NameResolver.Args.Key<Integer> INDEX =
        io.grpc.NameResolver.Args.Key.create("bench.channelIndex");

    @Override
    public boolean isAvailable() {
      return true;
    }

    @Override
    public int getPriority() {
      return 5;
    }

    @Override
    public String getPolicyName() {
      return POLICY;
    }

    @Override
    public ConfigOrError parseLoadBalancingPolicyConfig(Map<String, ?> raw) {
      Object seq = raw.get("seq");
      return seq instanceof Double d
          ? ConfigOrError.fromConfig(d.longValue())
          : ConfigOrError.fromError(Status.UNAVAILABLE.withDescription("config_probe.seq: " + seq));
    }

    @Override
    public LoadBalancer newLoadBalancer(LoadBalancer.Helper helper) {
      int index = helper.getNameResolverArgs().getArg(INDEX);
      return new LoadBalancer() {
        @Override
        public Status acceptResolvedAddresses(ResolvedAddresses resolved) {
          long seq = (Long) resolved.getLoadBalancingPolicyConfig();
          long now = System.nanoTime();
          if (seq > seen.get(index)) {
            arrivedAt.set(index, now);
            seen.set(index, seq);
          }
          return Status.OK;
        }

        @Override
        public void handleNameResolutionError(Status error) {}

        @Override
        public void shutdown() {}
      };
    }
  }
}
