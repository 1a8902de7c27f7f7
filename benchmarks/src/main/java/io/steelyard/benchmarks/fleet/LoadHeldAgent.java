package io.steelyard.benchmarks.fleet;

import static io.steelyard.benchmarks.BenchArgs.intArg;
import static io.steelyard.benchmarks.BenchArgs.stringArg;

import io.etcd.jetcd.Client;
import io.steelyard.agent.RegistrationState;
import io.steelyard.agent.ServiceRegistration;
import io.steelyard.agent.SharedLease;
import io.steelyard.registry.EtcdConnection;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The registrations side of {@link LoadHeld}, run as a child JVM of its own so that its threads,
 * heap and CPU are this process's alone: {@code --registrations} {@link ServiceRegistration}s over
 * {@code --services} services, all on one {@link SharedLease} ({@code --lease shared}, the default)
 * or a lease each ({@code --lease separate}), over one jetcd client; then {@code --rate} weight
 * changes per second for {@code --seconds}, each through {@link ServiceRegistration#setWeight}.
 *
 * <p>It talks to its parent in lines: on stdout {@code REGISTERED <seconds>}, then after {@code GO}
 * on stdin one {@code CHANGE <index> <weight> <issuedNanos> <ackedNanos>} per change ({@link
 * System#nanoTime()}: CLOCK_MONOTONIC on Linux, the same clock as the parent's; {@code ackedNanos}
 * 0 if the change failed), one {@code FINAL <index> <weight>} per registration (the weight it
 * believes it holds), {@code FAILED <count>}, {@code STATS ...}, {@code DONE}; on {@code EXIT} it closes every registration
 * and exits. Instance {@code i} is address {@link #address(int)} of service {@code i % services}.
 */
public final class LoadHeldAgent {

  private LoadHeldAgent() {}

  /** Instance {@code i}'s address (one per instance, unique across the run). */
  static String address(int i) {
    return "10.2." + (i / 250) + "." + (i % 250 + 1) + ":50051";
  }

  /** Instance {@code i}'s service. */
  static String service(String prefix, int i, int services) {
    return String.format(Locale.ROOT, "%s-s%02d", prefix, i % services);
  }

  public static void main(String[] args) throws Exception {
    String endpoints = stringArg(args, "--endpoints", null);
    String prefix = stringArg(args, "--service-prefix", "load");
    int n = intArg(args, "--registrations", 1_000);
    int services = intArg(args, "--services", 20);
    int rate = intArg(args, "--rate", 200);
    int seconds = intArg(args, "--seconds", 60);
    int ttl = intArg(args, "--ttl", 10);
    boolean shared = !"separate".equals(stringArg(args, "--lease", "shared"));
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

    Client client = EtcdConnection.of(endpoints).connect();
    SharedLease lease = shared ? SharedLease.builder(client).ttl(Duration.ofSeconds(ttl)).build() : null;
    AtomicInteger leftRegistered = new AtomicInteger(); // REGISTERED -> anything else, after the start
    List<ServiceRegistration> regs = new ArrayList<>(n);
    long t0 = System.nanoTime();
    for (int i = 0; i < n; i++) {
      var b = shared
          ? ServiceRegistration.builder(lease, service(prefix, i, services), address(i))
          : ServiceRegistration.builder(client, service(prefix, i, services), address(i)).ttl(Duration.ofSeconds(ttl));
      ServiceRegistration reg = b.weight(100).build();
      reg.addListener(new LeftRegistered(leftRegistered));
      regs.add(reg);
    }
    CompletableFuture.allOf(regs.stream().map(ServiceRegistration::start).toArray(CompletableFuture<?>[]::new))
        .get(5, TimeUnit.MINUTES);
    out.printf(Locale.ROOT, "REGISTERED %.2f%n", (System.nanoTime() - t0) / 1e9);
    out.flush();
    expect(in, "GO");

    // The changes: at a fixed rate, instances in turn (stride 7 mixes the services), each weight
    // one more than the instance's last, so a watcher's view of an instance only ever grows.
    long cpu0 = processCpuNanos();
    int total = rate * seconds;
    long[] issued = new long[total];
    long[] acked = new long[total];
    int[] index = new int[total];
    int[] weight = new int[total];
    int[] next = new int[n];
    AtomicInteger failed = new AtomicInteger();
    AtomicInteger sent = new AtomicInteger();
    AtomicLong lastAck = new AtomicLong();
    ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor();
    long periodNanos = 1_000_000_000L / rate;
    long w0 = System.nanoTime();
    ticker.scheduleAtFixedRate(() -> {
      int k = sent.get();
      if (k >= total) {
        return;
      }
      int i = (int) ((long) k * 7 % n);
      index[k] = i;
      weight[k] = 101 + next[i]++;
      issued[k] = System.nanoTime();
      sent.set(k + 1);
      regs.get(i).setWeight(weight[k]).whenComplete((v, e) -> {
        if (e != null) {
          failed.incrementAndGet();
        } else {
          acked[k] = System.nanoTime();
        }
        lastAck.incrementAndGet();
      });
    }, 0, periodNanos, TimeUnit.NANOSECONDS);
    while (lastAck.get() < total) {
      Thread.sleep(20); // a harness polling its own counter; the changes run on the ticker
    }
    double window = (System.nanoTime() - w0) / 1e9;
    long cpu = processCpuNanos() - cpu0;
    ticker.shutdown();
    for (int k = 0; k < total; k++) {
      out.printf(Locale.ROOT, "CHANGE %d %d %d %d%n", index[k], weight[k], issued[k], acked[k]);
    }
    for (int i = 0; i < n; i++) {
      out.printf(Locale.ROOT, "FINAL %d %d%n", i, regs.get(i).weight());
    }
    MemoryMXBean mem = ManagementFactory.getMemoryMXBean();
    long heap = Long.MAX_VALUE;
    for (int i = 0; i < 3; i++) {
      mem.gc();
      heap = Math.min(heap, mem.getHeapMemoryUsage().getUsed());
    }
    long notRegistered = regs.stream().filter(r -> r.state() != RegistrationState.REGISTERED).count();
    out.printf(Locale.ROOT, "FAILED %d%n", failed.get());
    out.printf(Locale.ROOT,
        "STATS window=%.2f threads=%d heapAfterGcBytes=%d cpuWindowSeconds=%.2f cpuTotalSeconds=%.2f"
            + " leftRegistered=%d notRegisteredNow=%d%n",
        window, ManagementFactory.getThreadMXBean().getThreadCount(), heap, cpu / 1e9,
        processCpuNanos() / 1e9, leftRegistered.get(), notRegistered);
    out.println("DONE");
    out.flush();
    expect(in, "EXIT");
    regs.parallelStream().forEach(ServiceRegistration::close);
    if (lease != null) {
      lease.close();
    }
    client.close();
    System.exit(0);
  }

  /** Counts every time a registration leaves REGISTERED for trouble (a lost lease, a refusal). */
  private record LeftRegistered(AtomicInteger count) implements io.steelyard.agent.RegistrationListener {
    @Override
    public void onStateChanged(RegistrationState state) {
      if (state == RegistrationState.RECOVERING || state == RegistrationState.DELETED_BY_OPERATOR
          || state == RegistrationState.REFUSED) {
        count.incrementAndGet();
      }
    }
  }

  private static void expect(BufferedReader in, String word) throws Exception {
    String line;
    while ((line = in.readLine()) != null) {
      if (line.trim().equals(word)) {
        return;
      }
    }
    System.exit(3); // the parent went away
  }

  static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
  }
}
