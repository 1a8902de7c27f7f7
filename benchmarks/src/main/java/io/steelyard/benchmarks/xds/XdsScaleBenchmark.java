package io.steelyard.benchmarks.xds;

import com.google.common.net.HostAndPort;
import io.envoyproxy.envoy.config.core.v3.Locality;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.endpoint.v3.LocalityLbEndpoints;
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
import io.steelyard.registry.Localities;
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
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.annotation.Nullable;

/**
 * Scale run of {@code bin/steelyard-xds} with zones: registers SERVICES × INSTANCES instances
 * spread over ZONES zones ({@code zone} metadata), opens STREAMS ADS streams whose nodes name one
 * of the zones in turn plus ZONELESS streams whose nodes name none, each subscribed to the EDS of
 * SUBSCRIPTIONS services and ACKing every response. Then changes one instance's weight CHANGES
 * times, one at a time, and times put → update received at every stream subscribed to the
 * service, whatever its zone. Reads the control plane's heap and CPU from its {@code /metrics}.
 * Run by {@code scripts/bench-xds}:
 *
 * <pre>{@code
 * java -cp benchmarks.jar io.steelyard.benchmarks.xds.XdsScaleBenchmark ETCD XDS METRICS_URL 1000 10 1000 3 200 3 100
 * }</pre>
 *
 * <p><b>Layout.</b> Instance {@code i} of service {@code s} is in zone {@code (i + s) mod ZONES},
 * so instance 0, the one the changes touch, is in the zone with the most instances of its
 * service, and which zone that is turns with the service. Zoned stream {@code t} is in zone
 * {@code t mod ZONES} and subscribes to services {@code t, t+1, ...}; with the defaults each
 * service has one subscriber per zone, so equal demand against 4, 3 and 3 instances: callers of
 * the two short zones spill to the long one. ZONES 0 is the zone-blind run: no zone metadata, no
 * locality in any node.
 *
 * <p><b>Changes.</b> Each change puts instance 0 with the next weight of the cycle 1..8 and a
 * {@value #CHANGE_KEY} counter in its metadata. The counter tells each stream's update apart
 * whatever the weights a caller's zone is served; the weight changes every zone's shares. The
 * run counts the subscribed streams at which the changed instance's locality weight moved.
 */
public final class XdsScaleBenchmark {

  /** Metadata key of the change counter on the changed instance. */
  static final String CHANGE_KEY = "bench-change";

  private static final PrintStream out = System.out;
  private static final String EDS = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";

  private final int services;
  private final int instances;
  private final int zones;
  private final List<Sim> sims = new ArrayList<>();
  /** Per service, the streams subscribed to it. */
  private final Map<Integer, List<Sim>> subscribers = new HashMap<>();
  /** Assignments received (a response carries one per service it answers). */
  private final AtomicLong assignments = new AtomicLong();
  /** Responses received (a state-of-the-world response carries every service its stream asks for). */
  private final AtomicLong responses = new AtomicLong();
  private volatile boolean closing;
  private final AtomicLong lastAssignmentNanos = new AtomicLong(System.nanoTime());
  /** The service whose change is awaited, or -1; streams holding it notify {@link #monitor}. */
  private volatile int awaited = -1;
  private final Object monitor = new Object();

  /** What a stream holds of one service: the change counter and instance 0's locality weight. */
  record Held(int change, int weight, long atNanos) {}

  /** One simulated ADS stream. */
  private final class Sim {
    final int id;
    @Nullable final String zone;
    final List<Integer> subscribed;
    final Map<Integer, Held> held = new ConcurrentHashMap<>();

    Sim(int id, @Nullable String zone, List<Integer> subscribed) {
      this.id = id;
      this.zone = zone;
      this.subscribed = subscribed;
    }

    void received(ClusterLoadAssignment cla) {
      int service = Integer.parseInt(cla.getClusterName().substring(4));
      String first = address(service, 0);
      int weight = 0;
      int change = -1;
      for (LocalityLbEndpoints l : cla.getEndpointsList()) {
        if (l.getLocality().getSubZone().equals(first)) {
          weight = l.getLoadBalancingWeight().getValue();
          var fields = l.getLbEndpoints(0).getMetadata().getFilterMetadataMap().values();
          for (var struct : fields) {
            var v = struct.getFieldsMap().get(CHANGE_KEY);
            if (v != null) {
              change = Integer.parseInt(v.getStringValue());
            }
          }
        }
      }
      long now = System.nanoTime();
      held.put(service, new Held(change, weight, now));
      assignments.incrementAndGet();
      lastAssignmentNanos.set(now);
      if (service == awaited) {
        synchronized (monitor) {
          monitor.notifyAll();
        }
      }
    }
  }

  private XdsScaleBenchmark(int services, int instances, int zones) {
    this.services = services;
    this.instances = instances;
    this.zones = zones;
  }

  static String name(int i) {
    return String.format("svc-%04d", i);
  }

  private static String address(int service, int instance) {
    return "10." + (service / 250) + "." + (service % 250) + "." + (instance + 1) + ":50051";
  }

  @Nullable
  private String zoneOf(int index) {
    return zones == 0 ? null : String.valueOf((char) ('a' + index % zones));
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 10) {
      System.err.println("usage: XdsScaleBenchmark ETCD_URLS XDS_HOST:PORT METRICS_URL SERVICES INSTANCES"
          + " STREAMS SUBSCRIPTIONS CHANGES ZONES ZONELESS");
      System.exit(2);
    }
    int[] n = new int[7];
    for (int k = 0; k < n.length; k++) {
      try {
        n[k] = Integer.parseInt(args[3 + k]);
      } catch (NumberFormatException e) {
        System.err.println("XdsScaleBenchmark: '" + args[3 + k] + "' is not a count");
        System.exit(2);
      }
    }
    int services = n[0];
    int streams = n[2];
    int subscriptions = n[3];
    int changes = n[4];
    int zones = n[5];
    int zoneless = n[6];
    if (services < 1 || n[1] < 1 || streams < 0 || zoneless < 0 || streams + zoneless < 1
        || subscriptions < 1 || subscriptions > services || changes < 1 || zones < 0 || zones > 26) {
      System.err.println("XdsScaleBenchmark: expected SERVICES, INSTANCES, SUBSCRIPTIONS (<= SERVICES),"
          + " CHANGES >= 1, STREAMS + ZONELESS >= 1 and ZONES 0..26");
      System.exit(2);
    }
    XdsScaleBenchmark bench = new XdsScaleBenchmark(services, n[1], zones);
    try (Client etcd = EtcdConnection.of(args[0]).connect()) {
      long t = System.nanoTime();
      bench.register(etcd);
      out.printf("registered %d services x %d instances over %d zones in %d ms%n", services, n[1], zones, ms(t));
      metrics(args[2], "after registering");
      HostAndPort xds = HostAndPort.fromString(args[1]);
      List<ManagedChannel> channels = new ArrayList<>();
      for (int c = 0; c < 8; c++) {
        channels.add(NettyChannelBuilder.forAddress(xds.getHost(), xds.getPort()).usePlaintext().build());
      }
      bench.plan(streams, zoneless, subscriptions);
      bench.connect(channels);
      metrics(args[2], "with the streams connected");
      bench.changes(etcd, changes);
      metrics(args[2], "after the changes");
      bench.closing = true;
      channels.forEach(ManagedChannel::shutdownNow);
    }
  }

  private void register(Client etcd) throws Exception {
    Semaphore inFlight = new Semaphore(200);
    List<CompletableFuture<?>> puts = new ArrayList<>();
    for (int s = 0; s < services; s++) {
      for (int i = 0; i < instances; i++) {
        inFlight.acquire();
        puts.add(put(etcd, instance(s, i, 1, Map.of())).whenComplete((r, e) -> inFlight.release()));
      }
    }
    CompletableFuture.allOf(puts.toArray(new CompletableFuture<?>[0])).get(5, TimeUnit.MINUTES);
  }

  /** Instance {@code i} of service {@code s}, in zone {@code (i + s) mod ZONES}. */
  private ServiceInstance instance(int s, int i, int weight, Map<String, String> extra) {
    Map<String, String> metadata = new HashMap<>(extra);
    String zone = zoneOf(i + s);
    if (zone != null) {
      metadata.put(Localities.ZONE_KEY, zone);
    }
    return new ServiceInstance(name(s), address(s, i), weight, metadata);
  }

  private static CompletableFuture<?> put(Client etcd, ServiceInstance instance) {
    return etcd.getKVClient()
        .put(
            KeyLayout.defaults().instanceKeyBytes(instance.service(), instance.address()),
            ByteSequence.from(ValueCodec.encode(instance, ValueFormat.JSON)));
  }

  /**
   * Zoned stream {@code t} (zone {@code t mod ZONES}) subscribes to services t, t+1, ...; zone-less
   * stream {@code u} to the same number of services from {@code u × SERVICES / ZONELESS} on.
   */
  private void plan(int streams, int zoneless, int subscriptions) {
    for (int t = 0; t < streams + zoneless; t++) {
      boolean zoned = t < streams;
      int from = zoned ? t : (int) ((long) (t - streams) * services / zoneless);
      List<Integer> names = new ArrayList<>();
      for (int k = 0; k < subscriptions; k++) {
        names.add((from + k) % services);
      }
      Sim sim = new Sim(t, zoned ? zoneOf(t) : null, names);
      sims.add(sim);
      names.forEach(s -> subscribers.computeIfAbsent(s, x -> new ArrayList<>()).add(sim));
    }
  }

  /**
   * Opens every stream, waits until each holds all its services, then until no assignment has
   * arrived for 2 s: each new subscriber moves its services' demand, which the other subscribers
   * of every zone are then sent.
   */
  private void connect(List<ManagedChannel> channels) throws InterruptedException {
    long t = System.nanoTime();
    for (Sim sim : sims) {
      open(channels.get(sim.id % channels.size()), sim);
    }
    long expected = sims.stream().mapToLong(s -> s.subscribed.size()).sum();
    while (sims.stream().mapToLong(s -> s.held.size()).sum() < expected) {
      if (ms(t) > 300_000) {
        throw new IllegalStateException("only " + assignments.get() + " of " + expected + " first assignments");
      }
      Thread.sleep(50);
    }
    long first = ms(t);
    while (System.nanoTime() - lastAssignmentNanos.get() < TimeUnit.SECONDS.toNanos(2)) {
      if (ms(t) > 600_000) {
        throw new IllegalStateException("assignments still arriving after 600 s");
      }
      Thread.sleep(100);
    }
    long quiet = TimeUnit.NANOSECONDS.toMillis(lastAssignmentNanos.get() - t);
    long zoned = sims.stream().filter(s -> s.zone != null).count();
    out.printf("%d streams (%d naming a zone, %d zone-less) held their %d assignments in %d ms;"
        + " the last response arrived at %d ms, %d responses in all%n",
        sims.size(), zoned, sims.size() - zoned, expected, first, quiet, responses.get());
  }

  /** Subscribes {@code sim} to its services with its node, and ACKs everything it is sent. */
  private void open(ManagedChannel channel, Sim sim) {
    List<String> names = sim.subscribed.stream().map(XdsScaleBenchmark::name).toList();
    Node.Builder node = Node.newBuilder().setId("bench-" + sim.id);
    if (sim.zone != null) {
      node.setLocality(Locality.newBuilder().setZone(sim.zone));
    }
    @SuppressWarnings("unchecked")
    StreamObserver<DiscoveryRequest>[] requests = new StreamObserver[1];
    requests[0] =
        AggregatedDiscoveryServiceGrpc.newStub(channel)
            .streamAggregatedResources(
                new StreamObserver<>() {
                  @Override
                  public void onNext(DiscoveryResponse r) {
                    responses.incrementAndGet();
                    for (var any : r.getResourcesList()) {
                      try {
                        sim.received(any.unpack(ClusterLoadAssignment.class));
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
                  public void onError(Throwable t) {
                    if (!closing) {
                      out.printf("stream %d failed: %s%n", sim.id, t);
                    }
                  }

                  @Override
                  public void onCompleted() {}
                });
    synchronized (requests) {
      requests[0].onNext(
          DiscoveryRequest.newBuilder().setNode(node).setTypeUrl(EDS).addAllResourceNames(names).build());
    }
  }

  private void changes(Client etcd, int changes) throws Exception {
    long[] all = new long[changes];
    long[] commits = new long[changes];
    long[] afterCommit = new long[changes];
    List<Long> zonedStreams = new ArrayList<>();
    List<Long> zonelessStreams = new ArrayList<>();
    long moved = 0;
    long updates = 0;
    long before = responses.get();
    Map<Integer, Integer> weights = new HashMap<>();
    Random random = new Random(42);
    for (int j = 0; j < changes; j++) {
      int s = random.nextInt(services);
      List<Sim> subs = subscribers.getOrDefault(s, List.of());
      int weight = weights.getOrDefault(s, 1) % 8 + 1;
      weights.put(s, weight);
      Map<Sim, Held> was = new HashMap<>();
      subs.forEach(sim -> was.put(sim, sim.held.get(s)));
      awaited = s;
      long t0 = System.nanoTime();
      put(etcd, instance(s, 0, weight, Map.of(CHANGE_KEY, String.valueOf(j)))).get(10, TimeUnit.SECONDS);
      long committed = System.nanoTime();
      long deadline = t0 + TimeUnit.SECONDS.toNanos(30);
      synchronized (monitor) {
        while (!allHold(subs, s, j)) {
          long left = deadline - System.nanoTime();
          if (left <= 0) {
            throw new IllegalStateException("change " + j + " of " + name(s) + " not seen by every subscriber");
          }
          TimeUnit.NANOSECONDS.timedWait(monitor, left);
        }
      }
      long done = System.nanoTime();
      awaited = -1;
      for (Sim sim : subs) {
        Held h = sim.held.get(s);
        (sim.zone == null ? zonelessStreams : zonedStreams).add(h.atNanos() - t0);
        if (was.get(sim) == null || was.get(sim).weight() != h.weight()) {
          moved++;
        }
      }
      updates += subs.size();
      all[j] = done - t0;
      commits[j] = committed - t0;
      afterCommit[j] = done - committed;
    }
    Thread.sleep(500);
    long received = responses.get() - before;
    percentiles(changes + " changes: put sent -> update at every subscribed stream", all);
    percentiles("  of which the put itself (etcd commit)", commits);
    percentiles("  put acknowledged -> update at every subscribed stream", afterCommit);
    percentiles("  put sent -> update, each stream naming a zone", zonedStreams);
    percentiles("  put sent -> update, each zone-less stream", zonelessStreams);
    out.printf("responses received %d: to streams subscribed to the changed service %d, to others %d;"
        + " the changed instance's locality weight moved at %d of the %d%n",
        received, updates, received - updates, moved, updates);
  }

  private static boolean allHold(List<Sim> subs, int service, int change) {
    for (Sim sim : subs) {
      Held h = sim.held.get(service);
      if (h == null || h.change() != change) {
        return false;
      }
    }
    return true;
  }

  private static void percentiles(String what, List<Long> nanos) {
    if (!nanos.isEmpty()) {
      percentiles(what, nanos.stream().mapToLong(Long::longValue).toArray());
    }
  }

  private static void percentiles(String what, long[] nanos) {
    long[] sorted = nanos.clone();
    Arrays.sort(sorted);
    int n = sorted.length;
    out.printf("%s: p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d)%n",
        what, sorted[n / 2] / 1e6, sorted[Math.min(n - 1, (int) (n * 0.99))] / 1e6, sorted[n - 1] / 1e6, n);
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
}
