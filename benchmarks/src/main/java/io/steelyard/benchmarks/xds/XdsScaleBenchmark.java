package io.steelyard.benchmarks.xds;

import com.google.common.net.HostAndPort;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.registry.ValueCodec;
import io.steelyard.registry.ValueFormat;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Scale run of {@code bin/steelyard-xds}: registers SERVICES × INSTANCES instances, opens STREAMS
 * ADS streams (each subscribed to the EDS of SUBSCRIPTIONS consecutive services, ACKing every
 * response), then changes one instance's weight CHANGES times, one at a time, and times put →
 * update received by every subscribed stream. Counts the responses that reached streams not
 * subscribed to the changed service (expected: none), and reads the control plane's heap and CPU
 * from its {@code /metrics}. Run by {@code scripts/bench-xds}:
 *
 * <pre>{@code
 * java -cp steelyard-xds.jar io.steelyard.xds.XdsScaleBenchmark ETCD XDS METRICS_URL 1000 10 1000 3 200
 * }</pre>
 */
public final class XdsScaleBenchmark {

  private static final PrintStream out = System.out;

  private final int services;
  private final int subscriptions;
  /** service → weight → streams that have received it. */
  private final Map<Integer, Map<Integer, AtomicLong>> seen = new ConcurrentHashMap<>();
  /** Assignments received (a response carries one per requested service). */
  private final AtomicLong responses = new AtomicLong();
  /** Responses received. */
  private final AtomicLong pushes = new AtomicLong();

  private XdsScaleBenchmark(int services, int subscriptions) {
    this.services = services;
    this.subscriptions = subscriptions;
  }

  static String name(int i) {
    return String.format("svc-%04d", i);
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 8) {
      System.err.println("usage: XdsScaleBenchmark ETCD_URLS XDS_HOST:PORT METRICS_URL SERVICES INSTANCES STREAMS SUBSCRIPTIONS CHANGES");
      System.exit(2);
    }
    int services = Integer.parseInt(args[3]);
    int instances = Integer.parseInt(args[4]);
    int streams = Integer.parseInt(args[5]);
    int subscriptions = Integer.parseInt(args[6]);
    int changes = Integer.parseInt(args[7]);
    XdsScaleBenchmark bench = new XdsScaleBenchmark(services, subscriptions);
    try (Client etcd = EtcdConnection.of(args[0]).connect()) {
      long t = System.nanoTime();
      bench.register(etcd, instances);
      out.printf("registered %d services x %d instances in %d ms%n", services, instances, ms(t));
      metrics(args[2], "after registering");
      HostAndPort xds = HostAndPort.fromString(args[1]);
      List<ManagedChannel> channels = new ArrayList<>();
      for (int c = 0; c < 8; c++) {
        channels.add(NettyChannelBuilder.forAddress(xds.getHost(), xds.getPort()).usePlaintext().build());
      }
      t = System.nanoTime();
      for (int s = 0; s < streams; s++) {
        bench.open(channels.get(s % channels.size()), s);
      }
      long expected = (long) streams * subscriptions;
      while (bench.responses.get() < expected) {
        if (ms(t) > 300_000) {
          throw new IllegalStateException("only " + bench.responses.get() + " of " + expected + " first responses");
        }
        Thread.sleep(50);
      }
      out.printf("%d streams got their %d first responses in %d ms%n", streams, expected, ms(t));
      metrics(args[2], "with the streams connected");
      bench.changes(etcd, changes, streams);
      metrics(args[2], "after the changes");
      channels.forEach(ManagedChannel::shutdownNow);
    }
  }

  private void register(Client etcd, int instances) throws Exception {
    Semaphore inFlight = new Semaphore(200);
    List<CompletableFuture<?>> puts = new ArrayList<>();
    for (int s = 0; s < services; s++) {
      for (int i = 0; i < instances; i++) {
        String address = "10." + (s / 250) + "." + (s % 250) + "." + (i + 1) + ":50051";
        inFlight.acquire();
        puts.add(put(etcd, ServiceInstance.of(name(s), address, 1)).whenComplete((r, e) -> inFlight.release()));
      }
    }
    CompletableFuture.allOf(puts.toArray(new CompletableFuture<?>[0])).get(5, TimeUnit.MINUTES);
  }

  private static CompletableFuture<?> put(Client etcd, ServiceInstance instance) {
    return etcd.getKVClient()
        .put(
            KeyLayout.defaults().instanceKeyBytes(instance.service(), instance.address()),
            ByteSequence.from(ValueCodec.encode(instance, ValueFormat.JSON)));
  }

  /** Stream {@code s} subscribes to services s, s+1, ... (mod the count) and ACKs everything. */
  private void open(ManagedChannel channel, int s) {
    List<String> names = new ArrayList<>();
    for (int k = 0; k < subscriptions; k++) {
      names.add(name((s + k) % services));
    }
    StreamObserver<DiscoveryRequest>[] requests = new StreamObserver[1];
    requests[0] =
        AggregatedDiscoveryServiceGrpc.newStub(channel)
            .streamAggregatedResources(
                new StreamObserver<>() {
                  @Override
                  public void onNext(DiscoveryResponse r) {
                    pushes.incrementAndGet();
                    for (var any : r.getResourcesList()) {
                      try {
                        ClusterLoadAssignment cla = any.unpack(ClusterLoadAssignment.class);
                        int service = Integer.parseInt(cla.getClusterName().substring(4));
                        // Only one instance per service is ever changed: the largest weight is its.
                        int weight = cla.getEndpointsList().stream()
                            .mapToInt(l -> l.getLoadBalancingWeight().getValue()).max().orElse(0);
                        seen.computeIfAbsent(service, x -> new ConcurrentHashMap<>())
                            .computeIfAbsent(weight, x -> new AtomicLong())
                            .incrementAndGet();
                        responses.incrementAndGet();
                      } catch (IOException e) {
                        throw new IllegalStateException(e);
                      }
                    }
                    synchronized (requests) {
                      requests[0].onNext(
                          DiscoveryRequest.newBuilder()
                              .setTypeUrl(r.getTypeUrl())
                              .addAllResourceNames(names)
                              .setVersionInfo(r.getVersionInfo())
                              .setResponseNonce(r.getNonce())
                              .build());
                    }
                  }

                  @Override
                  public void onError(Throwable t) {}

                  @Override
                  public void onCompleted() {}
                });
    synchronized (requests) {
      requests[0].onNext(
          DiscoveryRequest.newBuilder()
              .setNode(Node.newBuilder().setId("bench-" + s))
              .setTypeUrl(AdsTypes.EDS)
              .addAllResourceNames(names)
              .build());
    }
  }

  private void changes(Client etcd, int changes, int streams) throws Exception {
    long[] latencies = new long[changes];
    long[] afterAck = new long[changes];
    long[] puts = new long[changes];
    long before = pushes.get();
    java.util.Random random = new java.util.Random(42);
    for (int j = 0; j < changes; j++) {
      int s = random.nextInt(services);
      int weight = 1_000 + j;
      int subscribers = subscribersOf(s, streams);
      String address = "10." + (s / 250) + "." + (s % 250) + ".1:50051";
      long t0 = System.nanoTime();
      put(etcd, ServiceInstance.of(name(s), address, weight)).get(10, TimeUnit.SECONDS);
      long acked = System.nanoTime();
      while (count(s, weight) < subscribers) {
        if (System.nanoTime() - t0 > TimeUnit.SECONDS.toNanos(30)) {
          throw new IllegalStateException("change " + j + " of " + name(s) + " not seen by all subscribers");
        }
        Thread.onSpinWait();
      }
      long done = System.nanoTime();
      latencies[j] = done - t0;
      afterAck[j] = done - acked;
      puts[j] = acked - t0;
    }
    Thread.sleep(500);
    long pushed = pushes.get() - before;
    long expected = 0;
    java.util.Random again = new java.util.Random(42);
    for (int j = 0; j < changes; j++) {
      expected += subscribersOf(again.nextInt(services), streams);
    }
    percentiles(changes + " changes: put sent -> update at every subscriber", latencies);
    percentiles("  of which the put itself (etcd commit)", puts);
    percentiles("  put acknowledged -> update at every subscriber", afterAck);
    out.printf("responses received %d: to streams subscribed to the changed service %d, to others %d%n",
        pushed, expected, pushed - expected);
  }

  private static void percentiles(String what, long[] nanos) {
    long[] sorted = nanos.clone();
    Arrays.sort(sorted);
    int n = sorted.length;
    out.printf("%s: p50 %.1f ms, p99 %.1f ms, max %.1f ms%n",
        what, sorted[n / 2] / 1e6, sorted[Math.min(n - 1, (int) (n * 0.99))] / 1e6, sorted[n - 1] / 1e6);
  }

  private long count(int service, int weight) {
    AtomicLong c = seen.getOrDefault(service, Map.of()).get(weight);
    return c == null ? 0 : c.get();
  }

  private int subscribersOf(int service, int streams) {
    int n = 0;
    for (int s = 0; s < streams; s++) {
      int offset = Math.floorMod(service - s, services);
      if (offset < subscriptions) {
        n++;
      }
    }
    return n;
  }

  private static long ms(long startNanos) {
    return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos);
  }

  /** Prints the control plane's heap and CPU, as its /metrics reports them. */
  private static void metrics(String url, String when) throws Exception {
    String text =
        HttpClient.newHttpClient()
            .send(HttpRequest.newBuilder(URI.create(url)).build(), HttpResponse.BodyHandlers.ofString())
            .body();
    double heap = 0;
    double live = 0;
    double cpuSeconds = 0;
    for (String line : text.split("\n")) {
      if (line.startsWith("jvm_memory_used_bytes{") && line.contains("area=\"heap\"")) {
        heap += value(line);
      } else if (line.startsWith("jvm_gc_live_data_size_bytes")) {
        live = value(line);
      } else if (line.startsWith("process_cpu_time_ns_total")) {
        cpuSeconds = value(line) / 1e9;
      }
    }
    out.printf("control plane %s: heap used %.0f MB, live after last GC %.0f MB, CPU %.1f s%n",
        when, heap / 1e6, live / 1e6, cpuSeconds);
  }

  private static double value(String line) {
    return Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
  }

  /** Type URLs. */
  static final class AdsTypes {
    static final String EDS = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";

    private AdsTypes() {}
  }
}
