package io.steelyard.benchmarks.agent;

import static io.steelyard.benchmarks.BenchArgs.intArg;
import static io.steelyard.benchmarks.BenchArgs.stringArg;
import static io.steelyard.benchmarks.HostStats.loadAverage;

import io.etcd.jetcd.Client;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.support.CloseableClient;
import io.grpc.stub.StreamObserver;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.EtcdGrpcProxy;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * How far apart keepalive answers come, directly and through etcd's gRPC proxy: raw jetcd
 * keepalives (no agent) of {@code --registrations} leases over one client, every answer timed
 * for {@code --window} seconds. jetcd asks a third of the TTL after each answer, on a 500 ms
 * tick, so directly the gap is TTL/3 to TTL/3 + 0.5 s; a larger one is lateness, which the
 * agent's silence threshold learns (docs/operations.md, "Keepalives through a proxy"). Answers
 * less than a third of the TTL apart answer a request jetcd repeated while waiting; they are
 * counted apart ("repeats").
 *
 * <p>Usage: {@code scripts/bench-keepalive --gaps [--registrations 20] [--ttl 10] [--window 30]
 * [--via direct|proxy|both]}.
 */
final class KeepAliveGaps {

  private KeepAliveGaps() {}

  static void main(String[] args) throws Exception {
    int n = intArg(args, "--registrations", 20);
    int ttl = intArg(args, "--ttl", 10);
    int window = intArg(args, "--window", 30);
    String via = stringArg(args, "--via", "both");
    try (EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build()) {
      etcd.start();
      System.out.printf(Locale.ROOT, "etcd 3.4 x 1, %d leases over one jetcd client, TTL %d s, window %d s, load average %s%n",
          n, ttl, window, loadAverage());
      System.out.printf(Locale.ROOT, "%-8s %6s %8s %10s %10s %10s %10s%n",
          "via", "gaps", "repeats", "max ms", "> TTL/3+1s", "lost", "cap ms");
      for (String how : via.equals("both") ? List.of("direct", "proxy") : List.of(via)) {
        try (EtcdGrpcProxy proxy = how.equals("proxy") ? EtcdGrpcProxy.start(etcd) : null) {
          run(how, proxy != null ? proxy.endpoint() : etcd.endpoints(), n, ttl, window);
        }
      }
      System.out.printf(Locale.ROOT, "load average at the end %s%n", loadAverage());
    }
  }

  private static void run(String via, String endpoint, int n, int ttl, int window) throws Exception {
    long askNanos = TimeUnit.SECONDS.toNanos(ttl) / 3;
    long onTimeNanos = askNanos + TimeUnit.SECONDS.toNanos(1);
    try (Client client = EtcdConnection.of(endpoint).connect()) {
      List<List<Long>> answers = new ArrayList<>();
      List<CloseableClient> streams = new ArrayList<>();
      AtomicInteger lost = new AtomicInteger();
      for (int i = 0; i < n; i++) {
        long lease = client.getLeaseClient().grant(ttl).get(10, TimeUnit.SECONDS).getID();
        List<Long> times = new CopyOnWriteArrayList<>();
        answers.add(times);
        streams.add(client.getLeaseClient().keepAlive(lease, new StreamObserver<LeaseKeepAliveResponse>() {
          @Override
          public void onNext(LeaseKeepAliveResponse r) {
            times.add(System.nanoTime());
          }

          @Override
          public void onError(Throwable t) {
            lost.incrementAndGet();
          }

          @Override
          public void onCompleted() {
            lost.incrementAndGet(); // jetcd's deadline: no answer within the TTL
          }
        }));
      }
      Thread.sleep(TimeUnit.SECONDS.toMillis(window));
      streams.forEach(CloseableClient::close);
      int gaps = 0;
      int repeats = 0;
      int late = 0;
      long max = 0;
      for (List<Long> times : answers) {
        for (int i = 1; i < times.size(); i++) {
          long gap = times.get(i) - times.get(i - 1);
          if (gap < askNanos) {
            repeats++;
            continue;
          }
          gaps++;
          max = Math.max(max, gap);
          if (gap > onTimeNanos) {
            late++;
          }
        }
      }
      System.out.printf(Locale.ROOT, "%-8s %6d %8d %10d %10d %10d %10d%n", via, gaps, repeats,
          TimeUnit.NANOSECONDS.toMillis(max), late, lost.get(),
          TimeUnit.SECONDS.toMillis(ttl) - Math.max(1_500, TimeUnit.SECONDS.toMillis(ttl) / 6));
    }
  }
}
