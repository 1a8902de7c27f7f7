package io.steelyard.benchmarks.soak;

import static io.steelyard.benchmarks.BenchArgs.intArg;
import static io.steelyard.benchmarks.BenchArgs.stringArg;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.MoreExecutors;
import io.grpc.CallOptions;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.NameResolverRegistry;
import io.grpc.Status;
import io.grpc.stub.ClientCalls;
import io.steelyard.benchmarks.Echo;
import io.steelyard.discovery.EtcdNameResolverProvider;
import io.steelyard.registry.EtcdConnection;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

/**
 * The soak's client side, a JVM of its own: {@code --channels} channels, channel {@code c} on
 * {@code etcd:///<prefix>-sNN} for service {@code c % services}, each through the etcd resolver and
 * {@code weighted_least_request} ({@link ViewingPolicy}); after {@code GO}, {@code --rate} unary
 * calls a second in all, the channels in turn, each with a {@value #DEADLINE_SECONDS} s deadline:
 * the soak looks for lost calls, not slow ones, and on a 2-core machine shared with other builds
 * a call has been seen to take over 10 s (the slowest successful call is sampled, to tell an
 * overloaded machine from a lost call).
 *
 * <p>Commands on stdin (answers end with {@code END}): {@code VIEWS} answers one {@code VIEW <c>
 * <service> <address=weight,...>} per channel; {@code SAMPLE} answers {@code SAMPLE <heapAfterGc>
 * <threads> <fds> <pooledThreads> <calls> <failed> <slowestNanos> <slowerThan1s>} (the slowest
 * successful call since the last sample); {@code STOP} stops calling, waits for the calls under way and
 * answers one {@code FAIL <issuedNanos> <failedNanos> <code> <description>} per failed call ({@link
 * System#nanoTime()}, the parent's clock too on Linux); {@code EXIT} ends.
 */
public final class SoakCallers {

  static final int DEADLINE_SECONDS = 30;
  private static final int MAX_FAILURES_KEPT = 100_000;
  private static final byte[] PAYLOAD = new byte[16];

  private final List<ManagedChannel> channels = new ArrayList<>();
  private final List<ViewingPolicy> views = new ArrayList<>();
  private final List<String> services = new ArrayList<>();
  private final List<String> failures = new ArrayList<>(); // guarded by itself
  private final AtomicLong calls = new AtomicLong();
  private final AtomicLong failed = new AtomicLong();
  private final AtomicInteger underWay = new AtomicInteger();
  private final AtomicLong slowestNanos = new AtomicLong();
  private final AtomicLong slowerThan1s = new AtomicLong();
  private long next; // the ticker thread's

  public static void main(String[] args) throws Exception {
    String endpoints = stringArg(args, "--endpoints", null);
    String prefix = stringArg(args, "--service-prefix", "soak");
    int serviceCount = intArg(args, "--services", 10);
    int channelCount = intArg(args, "--channels", 20);
    int rate = intArg(args, "--rate", 500);
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

    NameResolverRegistry.getDefaultRegistry().register(
        EtcdNameResolverProvider.builder().connection(EtcdConnection.of(endpoints)).build());
    SoakCallers c = new SoakCallers();
    for (int i = 0; i < channelCount; i++) {
      String service = SoakBench.service(prefix, i % serviceCount);
      ViewingPolicy policy = ViewingPolicy.register("soak_view_" + i);
      c.services.add(service);
      c.views.add(policy);
      c.channels.add(Grpc.newChannelBuilder("etcd:///" + service, InsecureChannelCredentials.create())
          .defaultServiceConfig(Map.of("loadBalancingConfig", List.of(Map.of(policy.getPolicyName(), Map.of()))))
          // the viewing policy, not the resolver's weighted_random, while no config is stored
          .setNameResolverArg(EtcdNameResolverProvider.FALLBACK_SERVICE_CONFIG, Map.of())
          .build());
    }
    for (ManagedChannel ch : c.channels) {
      ch.getState(true); // resolve and connect now, before the first call
    }
    out.println("READY");
    out.flush();

    ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor();
    for (String line; (line = in.readLine()) != null; ) {
      switch (line.trim()) {
        case "VIEWS" -> {
          for (int i = 0; i < channelCount; i++) {
            out.println("VIEW " + i + " " + c.services.get(i) + " " + c.views.get(i).view().entrySet().stream()
                .map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining(",")));
          }
          out.println("END");
        }
        case "GO" -> {
          for (ManagedChannel ch : c.channels) { // one call each, waiting for a ready server
            ClientCalls.blockingUnaryCall(ch, Echo.METHOD,
                CallOptions.DEFAULT.withWaitForReady().withDeadlineAfter(60, TimeUnit.SECONDS), PAYLOAD);
          }
          ticker.scheduleAtFixedRate(c::call, 0, 1_000_000 / rate, TimeUnit.MICROSECONDS);
          out.println("END");
        }
        case "SAMPLE" -> out.println("SAMPLE " + ChildProcess.selfSample() + " " + c.calls.get() + " "
            + c.failed.get() + " " + c.slowestNanos.getAndSet(0) + " " + c.slowerThan1s.get() + "\nEND");
        case "STOP" -> {
          ticker.shutdown();
          ticker.awaitTermination(30, TimeUnit.SECONDS);
          long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DEADLINE_SECONDS + 5);
          while (c.underWay.get() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(20); // a harness polling its own counter, bounded by the deadline
          }
          synchronized (c.failures) {
            c.failures.forEach(out::println);
          }
          out.println(String.format(Locale.ROOT, "CALLS %d %d %d", c.calls.get(), c.failed.get(), c.underWay.get()));
          out.println("END");
        }
        case "EXIT" -> {
          c.channels.forEach(ManagedChannel::shutdownNow);
          out.flush();
          System.exit(0);
        }
        default -> out.println("UNKNOWN " + line + "\nEND");
      }
      out.flush();
    }
    System.exit(3); // the parent went away
  }

  private void call() {
    ManagedChannel ch = channels.get((int) (next++ % channels.size()));
    long issued = System.nanoTime();
    calls.incrementAndGet();
    underWay.incrementAndGet();
    var future = ClientCalls.futureUnaryCall(
        ch.newCall(Echo.METHOD, CallOptions.DEFAULT.withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS)), PAYLOAD);
    Futures.addCallback(future, new FutureCallback<byte[]>() {
      @Override
      public void onSuccess(byte[] result) {
        long took = System.nanoTime() - issued;
        slowestNanos.accumulateAndGet(took, Math::max);
        if (took > 1_000_000_000L) {
          slowerThan1s.incrementAndGet();
        }
        underWay.decrementAndGet();
      }

      @Override
      public void onFailure(Throwable t) {
        long at = System.nanoTime();
        failed.incrementAndGet();
        Status s = Status.fromThrowable(t);
        synchronized (failures) {
          if (failures.size() < MAX_FAILURES_KEPT) {
            failures.add(String.format(Locale.ROOT, "FAIL %d %d %s %s", issued, at, s.getCode(),
                String.valueOf(s.getDescription()).replace('\n', ' ')));
          }
        }
        underWay.decrementAndGet();
      }
    }, MoreExecutors.directExecutor());
  }
}
