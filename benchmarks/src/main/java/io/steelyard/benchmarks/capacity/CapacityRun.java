package io.steelyard.benchmarks.capacity;

import io.grpc.CallOptions;
import io.grpc.EquivalentAddressGroup;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.stub.ClientCalls;
import io.steelyard.benchmarks.CallRecorder;
import io.steelyard.testkit.grpc.CapacityBackend;
import io.steelyard.testkit.grpc.StaticResolverProvider;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * One run: a fresh fleet, a fresh channel with the policy, an open-loop Poisson load for the
 * warm-up and the measured period, the scenario's event, and the figures.
 */
final class CapacityRun {

  private final CapacityBench.Settings settings;
  private final StaticResolverProvider resolver;
  private final ScheduledExecutorService replies;
  private final ScheduledExecutorService sampler;

  /** How late the load generator sent its latest call in the last run, at worst, in ms. */
  volatile double lastMaxLagMillis;

  /** Calls of the last run still open long after their deadline (a starved machine), if any. */
  volatile int lastIncomplete;

  /** The machine's 1-minute load average at the end of the last run (NaN where unknown). */
  volatile double lastLoadAverage = Double.NaN;

  CapacityRun(
      CapacityBench.Settings settings,
      StaticResolverProvider resolver,
      ScheduledExecutorService replies,
      ScheduledExecutorService sampler) {
    this.settings = settings;
    this.resolver = resolver;
    this.replies = replies;
    this.sampler = sampler;
  }

  RunResult run(Scenario scenario, CapacityMix mix, Policy policy, int runIndex)
      throws Exception {
    // Same seed for every policy of a (scenario, mix): the same arrivals and service times.
    long seed = 31L * scenario.id().hashCode() + mix.name().hashCode();
    try (Fleet fleet =
        new Fleet(mix, scenario, settings.serviceTime(), replies, sampler, seed)) {
      String name = "run-" + runIndex;
      List<EquivalentAddressGroup> all = fleet.endpoints();
      // A joining server is not in the first resolution: the resolver delivers it at the event.
      List<EquivalentAddressGroup> first = scenario.joins() ? all.subList(0, all.size() - 1) : all;
      Runnable join = scenario.joins() ? () -> resolver.update(name, all) : () -> {};
      ManagedChannel channel =
          Grpc.newChannelBuilder(resolver.target(name, first), InsecureChannelCredentials.create())
              .defaultServiceConfig(policy.serviceConfig())
              .directExecutor()
              .build();
      try {
        ClientCalls.blockingUnaryCall(
            channel, CapacityBackend.METHOD, CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS), "");
        return measure(scenario, mix, policy, fleet, channel, join, seed);
      } finally {
        channel.shutdownNow();
        channel.awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }

  private RunResult measure(
      Scenario scenario,
      CapacityMix mix,
      Policy policy,
      Fleet fleet,
      ManagedChannel channel,
      Runnable join,
      long seed)
      throws InterruptedException {
    double ratePerSecond =
        settings.load() * mix.totalWorkers() / (settings.serviceTime().toNanos() / 1e9);
    long warmupNanos = settings.warmup().toNanos();
    long measuredNanos = settings.measured().toNanos();
    long bucketNanos = settings.bucket().toNanos();
    long eventAtNanos = (long) (measuredNanos * CapacityBench.EVENT_AT);

    // Poisson arrivals over warm-up + measured period, offsets from the start of measurement.
    Random random = new Random(seed);
    int expected = (int) (ratePerSecond * (warmupNanos + measuredNanos) / 1e9 * 1.3) + 64;
    long[] offsets = new long[expected];
    int total = 0;
    double t = -warmupNanos;
    while (true) {
      t += -Math.log(1 - random.nextDouble()) / ratePerSecond * 1e9;
      if (t >= measuredNanos) {
        break;
      }
      if (total == offsets.length) {
        offsets = java.util.Arrays.copyOf(offsets, total * 2);
      }
      offsets[total++] = (long) t;
    }
    CallRecorder calls = new CallRecorder(total);

    int buckets = (int) (measuredNanos / bucketNanos);
    long[][] serverArrivals = new long[buckets][];
    long start = System.nanoTime() + warmupNanos; // measurement starts here
    long[][] previous = {null};
    AtomicInteger bucket = new AtomicInteger();
    ScheduledFuture<?> bucketTask =
        sampler.scheduleAtFixedRate(
            () -> {
              long[] now = fleet.arrivals();
              int b = bucket.getAndIncrement() - 1; // the first tick marks the start
              if (b >= 0 && b < buckets) {
                long[] diff = new long[now.length];
                for (int s = 0; s < now.length; s++) {
                  diff[s] = now[s] - previous[0][s];
                }
                serverArrivals[b] = diff;
              }
              previous[0] = now;
            },
            start - System.nanoTime(),
            bucketNanos,
            TimeUnit.NANOSECONDS);
    ScheduledFuture<?> event =
        scenario.event() == null
            ? null
            : sampler.schedule(
                () -> {
                  scenario.event().accept(mix, fleet.backends);
                  join.run();
                },
                start + eventAtNanos - System.nanoTime(),
                TimeUnit.NANOSECONDS);
    ScheduledFuture<?> eventEnd =
        scenario.eventEnd() == null
            ? null
            : sampler.schedule(
                () -> scenario.eventEnd().accept(mix, fleet.backends),
                start + eventAtNanos + scenario.eventLength().toNanos() - System.nanoTime(),
                TimeUnit.NANOSECONDS);

    long maxLag = 0;
    for (int i = 0; i < total; i++) {
      long due = start + offsets[i];
      long wait;
      while ((wait = due - System.nanoTime()) > 0) {
        LockSupport.parkNanos(wait);
      }
      long lag = System.nanoTime() - due;
      if (lag > maxLag) {
        maxLag = lag;
      }
      calls.send(channel, i, due, settings.deadline().toNanos());
    }
    long giveUp = System.nanoTime() + settings.deadline().toNanos() + TimeUnit.SECONDS.toNanos(5);
    calls.awaitAll(giveUp);
    while (bucket.get() <= buckets && System.nanoTime() < giveUp) {
      Thread.sleep(10);
    }
    bucketTask.cancel(false);
    for (ScheduledFuture<?> task : java.util.Arrays.asList(event, eventEnd)) {
      if (task != null) {
        task.cancel(false);
      }
    }
    lastLoadAverage = loadAverage();
    lastMaxLagMillis = maxLag / 1e6;
    lastIncomplete = total - calls.finished();
    long[] latency = calls.latency();
    boolean[] failed = calls.failed();
    if (lastIncomplete > 0) {
      // Only on a starved machine (the client's deadline timer could not run): count them as
      // failed, at the time waited so far, rather than lose the run.
      long now = System.nanoTime();
      for (int i = 0; i < total; i++) {
        if (latency[i] == 0) {
          failed[i] = true;
          latency[i] = now - (start + offsets[i]);
        }
      }
    }
    // Keep the measured calls only (offset >= 0).
    int first = 0;
    while (first < total && offsets[first] < 0) {
      first++;
    }
    for (int b = 0; b < buckets; b++) {
      if (serverArrivals[b] == null) {
        serverArrivals[b] = new long[mix.workers().length];
      }
    }
    return new RunResult(
        scenario,
        mix,
        policy,
        measuredNanos,
        bucketNanos,
        eventAtNanos,
        java.util.Arrays.copyOfRange(offsets, first, total),
        java.util.Arrays.copyOfRange(latency, first, total),
        java.util.Arrays.copyOfRange(failed, first, total),
        serverArrivals,
        lastLoadAverage);
  }

  /**
   * The 1-minute load average from {@code /proc/loadavg} (Linux): the machine is shared, and a
   * run's figures are read next to it.
   */
  private static double loadAverage() {
    try {
      return Double.parseDouble(Files.readString(Path.of("/proc/loadavg")).split(" ")[0]);
    } catch (IOException | RuntimeException e) {
      return Double.NaN;
    }
  }
}
