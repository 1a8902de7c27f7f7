package io.steelyard.benchmarks.discovery;

import static io.steelyard.benchmarks.BenchArgs.intArg;
import static io.steelyard.benchmarks.BenchArgs.stringArg;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.kv.PutResponse;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.PutOption;
import io.grpc.EquivalentAddressGroup;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.discovery.DiscoveryStats;
import io.steelyard.discovery.ServiceWatcher;
import io.steelyard.discovery.Snapshot;
import io.steelyard.discovery.EtcdNameResolverProvider;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.testkit.EtcdCluster;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Locale;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Discovery figures, as a plain harness rather than JMH: each figure is a wall-clock distribution
 * over real etcd round trips, not a hot loop.
 *
 * <ul>
 *   <li>{@code latency}: time from an etcd put (issued) to the changed address list reaching a
 *       real channel's load balancer through the {@code etcd:} resolver; p50/p99/max over
 *       {@code --updates} sequential weight changes.
 *   <li>{@code coldstart}: {@code --instances} keys under one service; time from {@code open} to
 *       the first complete list, and the heap the watcher retains.
 * </ul>
 *
 * <p>Usage: {@code java -cp benchmarks/target/benchmarks.jar
 * io.steelyard.benchmarks.discovery.DiscoveryBench [latency|coldstart|all] [--updates N]
 * [--instances N] [--endpoints URLS]}. Without {@code --endpoints} a local etcd is started with
 * the testkit.
 */
public final class DiscoveryBench {

  private static final String POLICY = "steelyard_bench_timing";
  /** (weight, arrival nanoTime) of every list the channel's balancer receives. */
  private static final BlockingQueue<long[]> ARRIVALS = new LinkedBlockingQueue<>();
  private static final AtomicReference<CountDownLatch> BIG_LIST = new AtomicReference<>();
  /** Arrival nanoTime of every full list of the large service at a channel's balancer. */
  private static final BlockingQueue<Long> BIG_ARRIVALS = new LinkedBlockingQueue<>();
  private static volatile int bigListSize;

  private DiscoveryBench() {}

  public static void main(String[] args) throws Exception {
    String mode = args.length > 0 && !args[0].startsWith("--") ? args[0] : "all";
    int updates = intArg(args, "--updates", 1_000);
    int instances = intArg(args, "--instances", 10_000);
    String endpoints = stringArg(args, "--endpoints", null);
    EtcdCluster local = null;
    if (endpoints == null) {
      local = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();
      local.start();
      endpoints = local.endpoints();
    }
    try {
      TimingBalancerProvider.register(POLICY, DiscoveryBench::arrived);
      EtcdConnection conn = EtcdConnection.of(endpoints);
      System.out.printf(Locale.ROOT, "etcd %s, java %s, %d cpus%n", endpoints,
          System.getProperty("java.version"), Runtime.getRuntime().availableProcessors());
      if (mode.equals("coldstart") || mode.equals("all")) {
        coldStart(conn, instances);
      }
      if (mode.equals("latency") || mode.equals("all")) {
        latency(conn, updates);
      }
    } finally {
      if (local != null) {
        local.close();
      }
    }
    System.exit(0);
  }

  // ------------------------------------------------------------------ propagation latency

  private static void latency(EtcdConnection conn, int updates) throws Exception {
    String service = "bench-latency";
    String key = "/services/" + service + "/127.0.0.1:9000";
    try (Client writer = conn.connect()) {
      put(writer, key, "127.0.0.1:9000|1");
      ManagedChannel channel = Grpc.newChannelBuilder(target(conn, service), InsecureChannelCredentials.create())
          .defaultLoadBalancingPolicy(POLICY)
          // The timing policy, not the resolver's weighted_random fallback (no config is stored).
          .setNameResolverArg(EtcdNameResolverProvider.FALLBACK_SERVICE_CONFIG, Map.of())
          .build();
      channel.getState(true);
      awaitWeight(1, System.nanoTime());
      // Back to back: the next put leaves as soon as the previous change arrived, so every
      // change lands inside the throttle window of the previous publish (worst case).
      measure(writer, key, updates, 0, "back-to-back");
      // Paced: one change every 25 ms, longer than the window, like independent weight changes.
      measure(writer, key, updates, 25, "paced 25 ms");
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  private static void measure(Client writer, String key, int updates, int paceMillis, String label)
      throws Exception {
    int warmup = Math.min(200, updates / 5);
    long[] nanos = new long[updates];
    long[] acks = new long[updates];
    long[] afterAck = new long[updates];
    for (int i = 0; i < warmup + updates; i++) {
      if (paceMillis > 0) {
        java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(paceMillis));
      }
      int weight = 2 + (i % 1000);
      long start = System.nanoTime();
      AtomicLong acked = new AtomicLong();
      CompletableFuture<PutResponse> put =
          writer.getKVClient().put(bytes(key), bytes("127.0.0.1:9000|" + weight));
      put.thenRun(() -> acked.set(System.nanoTime()));
      long arrived = awaitWeight(weight, start);
      put.get(10, TimeUnit.SECONDS);
      while (acked.get() == 0) {
        Thread.onSpinWait(); // thenRun may still be running on jetcd's thread
      }
      if (i >= warmup) {
        nanos[i - warmup] = arrived - start;
        acks[i - warmup] = acked.get() - start;
        afterAck[i - warmup] = arrived - acked.get(); // negative: the event beat the ack
      }
    }
    Arrays.sort(nanos);
    Arrays.sort(acks);
    Arrays.sort(afterAck);
    System.out.printf(Locale.ROOT,
        "propagation latency put -> channel LB, %s, %d updates: p50 %.2f ms, p90 %.2f ms,"
            + " p99 %.2f ms, max %.2f ms (throttle window %d ms)%n",
        label, updates, ms(pct(nanos, 50)), ms(pct(nanos, 90)), ms(pct(nanos, 99)),
        ms(nanos[nanos.length - 1]), ServiceWatcher.DEFAULT_DEBOUNCE_MILLIS);
    System.out.printf(Locale.ROOT,
        "  etcd's own put -> ack over the same puts (commit incl. fsync): p50 %.2f ms, p99 %.2f ms,"
            + " max %.2f ms%n",
        ms(pct(acks, 50)), ms(pct(acks, 99)), ms(acks[acks.length - 1]));
    System.out.printf(Locale.ROOT,
        "  after the ack (watch + discovery + channel, per update): p50 %.2f ms, p99 %.2f ms,"
            + " max %.2f ms%n",
        ms(pct(afterAck, 50)), ms(pct(afterAck, 99)), ms(afterAck[afterAck.length - 1]));
  }

  private static long awaitWeight(int weight, long since) throws InterruptedException {
    while (true) {
      long[] a = ARRIVALS.poll(10, TimeUnit.SECONDS);
      if (a == null) {
        throw new IllegalStateException("weight " + weight + " never reached the channel");
      }
      if (a[0] == weight && a[1] >= since) {
        return a[1];
      }
    }
  }

  // ------------------------------------------------------------------ cold start

  private static void coldStart(EtcdConnection conn, int instances) throws Exception {
    String service = "bench-cold";
    try (Client writer = conn.connect()) {
      long t = System.nanoTime();
      // Transactions of 100 puts (etcd allows 128 operations per transaction), 16 in flight.
      Semaphore inFlight = new Semaphore(16);
      List<CompletableFuture<?>> txns = new ArrayList<>();
      List<Op> ops = new ArrayList<>(100);
      for (int i = 0; i < instances; i++) {
        String addr = address(i);
        ops.add(Op.put(bytes("/services/" + service + "/" + addr), bytes(addr + "|" + (1 + i % 100)),
            PutOption.DEFAULT));
        if (ops.size() == 100 || i == instances - 1) {
          inFlight.acquire();
          CompletableFuture<?> f = writer.getKVClient().txn().Then(ops.toArray(Op[]::new)).commit();
          f.whenComplete((r, e) -> inFlight.release());
          txns.add(f);
          ops.clear();
        }
      }
      CompletableFuture.allOf(txns.toArray(CompletableFuture[]::new)).get(300, TimeUnit.SECONDS);
      System.out.printf(Locale.ROOT, "wrote %d instances in %.0f ms%n", instances, ms(System.nanoTime() - t));
    }

    ServiceWatcher holder = coldStartAndJoin(conn, service, instances);
    try {
      retainedHeap(conn, service);
      largeServiceLag(conn, service, instances);
    } finally {
      holder.close();
    }
  }

  private static String address(int i) {
    return "10." + (i >> 16 & 255) + "." + (i >> 8 & 255) + "." + (i & 255) + ":50051";
  }

  /**
   * Watch lag on the large service: paced weight changes of single instances, each timed from
   * the put to (a) a {@code ServiceWatcher} snapshot holding it and (b) the next address list at
   * a real channel's balancer (all instances, rebuilt by the resolver for every change).
   */
  private static void largeServiceLag(EtcdConnection conn, String service, int instances) throws Exception {
    int updates = 200;
    BlockingQueue<Snapshot> snapshots = new LinkedBlockingQueue<>();
    bigListSize = instances;
    BIG_ARRIVALS.clear();
    BIG_LIST.set(new CountDownLatch(1));
    long[] toWatcher = new long[updates];
    long[] toChannel = new long[updates];
    try (Client writer = conn.connect();
        ServiceWatcher watcher = ServiceWatcher.open(conn, KeyLayout.defaults(), service, snapshots::add)) {
      ManagedChannel channel = Grpc.newChannelBuilder(target(conn, service), InsecureChannelCredentials.create())
          .defaultLoadBalancingPolicy(POLICY)
          // The timing policy, not the resolver's weighted_random fallback (no config is stored).
          .setNameResolverArg(EtcdNameResolverProvider.FALLBACK_SERVICE_CONFIG, Map.of())
          .build();
      channel.getState(true);
      await(BIG_LIST.get());
      for (int i = 0; i < updates; i++) {
        java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(25));
        String addr = address((i * 7919) % instances);
        int weight = 200 + i; // never one of the initial weights (1..100)
        snapshots.clear();
        BIG_ARRIVALS.clear();
        long start = System.nanoTime();
        writer.getKVClient().put(bytes("/services/" + service + "/" + addr), bytes(addr + "|" + weight))
            .get(10, TimeUnit.SECONDS);
        toWatcher[i] = awaitInSnapshot(snapshots, addr, weight) - start;
        Long atChannel = BIG_ARRIVALS.poll(30, TimeUnit.SECONDS);
        if (atChannel == null) {
          throw new IllegalStateException("change " + i + " never reached the channel");
        }
        toChannel[i] = atChannel - start;
      }
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    } finally {
      BIG_LIST.set(null);
    }
    Arrays.sort(toWatcher);
    Arrays.sort(toChannel);
    System.out.printf(Locale.ROOT,
        "watch lag, %d instances, %d changes paced 25 ms: put -> ServiceWatcher snapshot p50 %.2f ms,"
            + " p99 %.2f ms, max %.2f ms; put -> channel LB (all %d addresses) p50 %.2f ms, p99 %.2f ms,"
            + " max %.2f ms%n",
        instances, updates, ms(pct(toWatcher, 50)), ms(pct(toWatcher, 99)), ms(toWatcher[updates - 1]),
        instances, ms(pct(toChannel, 50)), ms(pct(toChannel, 99)), ms(toChannel[updates - 1]));
  }

  /** When a snapshot holding {@code address} at {@code weight} reached the listener. */
  private static long awaitInSnapshot(BlockingQueue<Snapshot> snapshots, String address, int weight)
      throws InterruptedException {
    while (true) {
      Snapshot s = snapshots.poll(30, TimeUnit.SECONDS);
      if (s == null) {
        throw new IllegalStateException(address + "|" + weight + " never reached the watcher");
      }
      long now = System.nanoTime();
      List<ServiceInstance> list = s.instances(); // sorted by address
      int i = java.util.Collections.binarySearch(
          list.stream().map(ServiceInstance::address).toList(), address);
      if (i >= 0 && list.get(i).weight() == weight) {
        return now;
      }
    }
  }

  /**
   * Times the first watcher of the JVM and a channel joining it; returns a watcher of another
   * service that keeps the shared etcd client alive, with every local of this frame dead.
   */
  private static ServiceWatcher coldStartAndJoin(EtcdConnection conn, String service, int instances)
      throws Exception {
    // 1. Cold: the first watcher of the JVM (creates the etcd client, loads the classes).
    long t0 = System.nanoTime();
    CountDownLatch first = new CountDownLatch(1);
    AtomicLong listed = new AtomicLong();
    ServiceWatcher big = ServiceWatcher.open(conn, KeyLayout.defaults(), service, s -> {
      listed.set(s.instances().size());
      first.countDown();
    });
    await(first);
    System.out.printf(Locale.ROOT,
        "cold start, first watcher of the JVM: %d instances listed in %.1f ms%n",
        listed.get(), ms(System.nanoTime() - t0));

    // 2. A channel joining the shared watcher: time until its balancer holds every address.
    bigListSize = instances;
    CountDownLatch atBalancer = new CountDownLatch(1);
    BIG_LIST.set(atBalancer);
    long t1 = System.nanoTime();
    ManagedChannel channel = Grpc.newChannelBuilder(target(conn, service), InsecureChannelCredentials.create())
        .defaultLoadBalancingPolicy(POLICY)
        // The timing policy, not the resolver's weighted_random fallback (no config is stored).
        .setNameResolverArg(EtcdNameResolverProvider.FALLBACK_SERVICE_CONFIG, Map.of())
        .build();
    channel.getState(true);
    await(atBalancer);
    System.out.printf(Locale.ROOT,
        "new channel on the shared watcher: %d addresses at its balancer in %.1f ms%n",
        instances, ms(System.nanoTime() - t1));
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    BIG_LIST.set(null);

    ServiceWatcher holder = ServiceWatcher.open(conn, KeyLayout.defaults(), "bench-empty", s -> {});
    while (DiscoveryStats.openEtcdWatches() < 2) {
      Thread.onSpinWait();
    }
    big.close();
    while (DiscoveryStats.activeWatches() > 1 || DiscoveryStats.openEtcdWatches() > 1) {
      Thread.onSpinWait();
    }
    return holder;
  }

  /** Heap before and after a fresh watcher of the big service lists it; the client is shared. */
  private static void retainedHeap(EtcdConnection conn, String service) throws Exception {
    MemoryMXBean mem = ManagementFactory.getMemoryMXBean();
    long before = usedHeapAfterGc(mem);
    CountDownLatch listed = new CountDownLatch(1);
    AtomicLong size = new AtomicLong();
    ServiceWatcher again = ServiceWatcher.open(conn, KeyLayout.defaults(), service, s -> {
      size.set(s.instances().size());
      listed.countDown();
    });
    await(listed);
    long after = usedHeapAfterGc(mem);
    System.out.printf(Locale.ROOT,
        "retained heap of the watcher of %d instances: %.1f MB (%.0f bytes/instance)%n",
        size.get(), (after - before) / 1e6, (after - before) / (double) size.get());
    again.close();
  }

  private static long usedHeapAfterGc(MemoryMXBean mem) throws InterruptedException {
    long used = Long.MAX_VALUE;
    for (int i = 0; i < 5; i++) {
      mem.gc();
      used = Math.min(used, mem.getHeapMemoryUsage().getUsed());
    }
    return used;
  }

  private static void await(CountDownLatch latch) throws InterruptedException {
    if (!latch.await(60, TimeUnit.SECONDS)) {
      throw new IllegalStateException("timed out");
    }
  }

  // ------------------------------------------------------------------ plumbing

  /** Runs in the channel's SynchronizationContext as each list reaches its balancer. */
  private static void arrived(String authority, List<EquivalentAddressGroup> eags) {
    long now = System.nanoTime();
    if (eags.size() == 1) {
      ARRIVALS.add(new long[] {EndpointWeights.weight(eags.get(0)), now});
    }
    CountDownLatch big = BIG_LIST.get();
    if (big != null && eags.size() == bigListSize) {
      big.countDown();
      BIG_ARRIVALS.add(now);
    }
  }

  /** The target naming {@code service} at {@code conn}'s plain-HTTP members (docs/discovery.md). */
  private static String target(EtcdConnection conn, String service) {
    List<String> members = conn.endpoints().stream().map(java.net.URI::getRawAuthority).toList();
    return members.size() == 1
        ? "etcd://" + members.get(0) + "/" + service
        : "etcd:///" + service + "?endpoints=" + String.join(",", members);
  }

  private static void put(Client c, String key, String value) throws Exception {
    c.getKVClient().put(bytes(key), bytes(value)).get(10, TimeUnit.SECONDS);
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }

  private static long pct(long[] sorted, int p) {
    int i = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, i))];
  }

  private static double ms(long nanos) {
    return nanos / 1e6;
  }
}
