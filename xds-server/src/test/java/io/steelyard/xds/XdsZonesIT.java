package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.NameResolverRegistry;
import io.grpc.StatusRuntimeException;
import io.grpc.xds.XdsNameResolverProvider;
import io.steelyard.examples.GreeterServer;
import io.steelyard.examples.proto.GreeterGrpc;
import io.steelyard.examples.proto.HelloRequest;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.testkit.EtcdCluster;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import javax.annotation.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Zone-aware assignments and slow start as grpc-java's own xDS client ({@code grpc-xds}) gets
 * them, against the control plane, real etcd and real greeter servers in zones {@code a} and
 * {@code b}, two of weight 2 in each. Each client process is stood for by its own xDS client
 * with its own bootstrap ({@code node.locality}), reached through a scheme of its own; a
 * zone-{@code b} client calls throughout, so that the callers are spread over both zones.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class XdsZonesIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private static XdsServer xds;
  private static final List<XdsNameResolverProvider> providers = new ArrayList<>();

  @BeforeAll
  static void startControlPlane() {
    xds = XdsServer.builder(EtcdConnection.of(etcd.endpoints())).port(0).build().start();
    for (String zone : List.of("a", "b", "")) {
      Map<String, Object> node = new HashMap<>();
      node.put("id", "zones-it-" + (zone.isEmpty() ? "none" : zone));
      if (!zone.isEmpty()) {
        node.put("locality", Map.of("zone", zone));
      }
      Map<String, Object> bootstrap = Map.of(
          "xds_servers", List.of(Map.of(
              "server_uri", "127.0.0.1:" + xds.port(),
              "channel_creds", List.of(Map.of("type", "insecure")),
              "server_features", List.of("xds_v3"))),
          "node", node);
      XdsNameResolverProvider p = XdsNameResolverProvider.createForTest(scheme(zone), bootstrap);
      providers.add(p);
      NameResolverRegistry.getDefaultRegistry().register(p);
    }
  }

  @AfterAll
  static void stopControlPlane() {
    providers.forEach(NameResolverRegistry.getDefaultRegistry()::deregister);
    xds.close();
  }

  private static String scheme(String zone) {
    return "xds-zone-" + (zone.isEmpty() ? "none" : zone);
  }

  private final List<AutoCloseable> closeables = new ArrayList<>();
  private final ExecutorService background = Executors.newCachedThreadPool();
  private final AtomicBoolean stop = new AtomicBoolean();

  @AfterEach
  void closeAll() throws Exception {
    stop.set(true);
    background.shutdown();
    background.awaitTermination(10, TimeUnit.SECONDS);
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
  }

  private GreeterServer greeter(String service, String zone) {
    GreeterServer server =
        QuickGreeters.builder(etcd, service).weight(2).zone(zone).build().start();
    closeables.add(server::shutdownNow);
    return server;
  }

  /** A channel of the client in {@code zone} ("" for none) to {@code service}. */
  private GreeterGrpc.GreeterBlockingStub client(String zone, String service) {
    ManagedChannel channel =
        Grpc.newChannelBuilder(scheme(zone) + ":///" + service, InsecureChannelCredentials.create()).build();
    closeables.add(() -> {
      channel.shutdownNow();
      channel.awaitTermination(5, TimeUnit.SECONDS);
    });
    return GreeterGrpc.newBlockingStub(channel);
  }

  /** The zone-b client, calling until the test ends; returns its failed-call counter. */
  private AtomicInteger callInBackground(String service) {
    GreeterGrpc.GreeterBlockingStub stub = client("b", service);
    AtomicInteger failed = new AtomicInteger();
    background.execute(() -> {
      while (!stop.get()) {
        if (call(stub) == null) {
          failed.incrementAndGet();
        }
      }
    });
    return failed;
  }

  /** The address that answered, or null for a failed call. */
  @Nullable
  private static String call(GreeterGrpc.GreeterBlockingStub stub) {
    try {
      return stub.withDeadlineAfter(5, TimeUnit.SECONDS)
          .sayHello(HelloRequest.newBuilder().setName("java").build())
          .getServerAddress();
    } catch (StatusRuntimeException e) {
      return null;
    }
  }

  /** Calls per answering address; failed calls under "failed". */
  private static Map<String, Integer> calls(GreeterGrpc.GreeterBlockingStub stub, int n) {
    Map<String, Integer> counts = new TreeMap<>();
    for (int i = 0; i < n; i++) {
      String a = call(stub);
      counts.merge(a == null ? "failed" : a, 1, Integer::sum);
    }
    return counts;
  }

  /**
   * Calls until {@code done} holds for the last {@code window} calls, within 30 s; returns the
   * number of failed calls on the way.
   */
  private static int callUntil(
      GreeterGrpc.GreeterBlockingStub stub, int window, Predicate<Map<String, Integer>> done) {
    ArrayDeque<String> last = new ArrayDeque<>();
    Map<String, Integer> counts = new HashMap<>();
    AtomicInteger failed = new AtomicInteger();
    await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ZERO).pollDelay(Duration.ZERO).until(() -> {
      String a = call(stub);
      if (a == null) {
        failed.incrementAndGet();
        a = "failed";
      }
      last.addLast(a);
      counts.merge(a, 1, Integer::sum);
      if (last.size() > window) {
        counts.merge(last.removeFirst(), -1, Integer::sum);
      }
      return last.size() == window && done.test(counts);
    });
    return failed.get();
  }

  private static int sum(Map<String, Integer> counts, GreeterServer... servers) {
    int n = 0;
    for (GreeterServer s : servers) {
      n += counts.getOrDefault(s.address(), 0);
    }
    return n;
  }

  @Test
  void callsStayInTheirZoneAndAShortZoneSpillsByItsMissingCapacity() {
    String service = "zones";
    GreeterServer a1 = greeter(service, "a");
    GreeterServer a2 = greeter(service, "a");
    GreeterServer b1 = greeter(service, "b");
    GreeterServer b2 = greeter(service, "b");
    AtomicInteger bFailed = callInBackground(service);
    GreeterGrpc.GreeterBlockingStub a = client("a", service);
    GreeterGrpc.GreeterBlockingStub none = client("", service);

    // (i) Local calls stay local; a client without a locality spreads by weight.
    callUntil(a, 200, c -> c.getOrDefault(a1.address(), 0) + c.getOrDefault(a2.address(), 0) == 200);
    Map<String, Integer> local = calls(a, 2_000);
    callUntil(none, 200, c -> sum(c, a1, a2) > 0 && sum(c, b1, b2) > 0);
    Map<String, Integer> blind = calls(none, 2_000);
    System.out.printf("grpc-java zone a, fleet 2+2 of weight 2: %.1f %% local of 2,000 %s%n",
        100.0 * sum(local, a1, a2) / 2_000, local);
    System.out.printf("grpc-java no zone: %.1f %% to zone a of 2,000 %s%n",
        100.0 * sum(blind, a1, a2) / 2_000, blind);
    assertThat(sum(local, a1, a2) / 2_000.0).as("local share in %s", local).isGreaterThanOrEqualTo(0.95);
    assertThat(sum(blind, a1, a2) / 2_000.0).as("zone a share in %s", blind).isCloseTo(0.5, within(0.03));

    // (ii) One zone-a server drained: a has half b's capacity against equal demand.
    a1.setWeight(0);
    callUntil(a, 300, c -> c.getOrDefault(a1.address(), 0) == 0
        && Math.abs(c.getOrDefault(a2.address(), 0) / 300.0 - 2.0 / 3) <= 0.08);
    Map<String, Integer> spill = calls(a, 2_000);
    System.out.printf("grpc-java zone a, one a server drained: %.1f %% local of 2,000 %s%n",
        100.0 * sum(spill, a1, a2) / 2_000, spill);
    assertThat(spill.getOrDefault(a1.address(), 0)).isZero();
    assertThat(sum(spill, a2) / 2_000.0).as("local share in %s", spill).isCloseTo(2.0 / 3, within(0.04));

    // Both drained: every call to b, none failed.
    a2.setWeight(0);
    int failedOnTheWay = callUntil(a, 300, c -> sum(c, b1, b2) == 300);
    Map<String, Integer> gone = calls(a, 2_000);
    System.out.printf("grpc-java zone a, both a servers drained: %.1f %% to b of 2,000 %s,"
        + " %d failed while the drain reached the client; zone-b client: %d failed%n",
        100.0 * sum(gone, b1, b2) / 2_000, gone, failedOnTheWay, bFailed.get());
    assertThat(gone).containsOnlyKeys(b1.address(), b2.address());
    assertThat(failedOnTheWay).isZero();
    assertThat(bFailed.get()).isZero();
  }

  private static void storeConfig(String service, String json) throws Exception {
    try (Client client = EtcdConnection.of(etcd.endpoints()).connect()) {
      client.getKVClient()
          .put(ByteSequence.from(KeyLayout.defaults().serviceConfigKey(service), StandardCharsets.UTF_8),
              ByteSequence.from(json, StandardCharsets.UTF_8))
          .get(10, TimeUnit.SECONDS);
    }
  }

  /** The locality weights served to callers in {@code zone} (null: zone-less), by address. */
  private static Map<String, Integer> served(@Nullable String zone, String service) {
    XdsSnapshot snapshot = xds.publisher().snapshot(zone);
    Map<String, Integer> out = new TreeMap<>();
    ClusterLoadAssignment cla = snapshot == null ? null : snapshot.endpoints().resources().get(service);
    if (cla != null) {
      cla.getEndpointsList().forEach(l -> out.put(l.getLocality().getSubZone(), l.getLoadBalancingWeight().getValue()));
    }
    return out;
  }

  @Test
  void aNewServerWarmsUpOverTheSlowStartWindow() throws Exception {
    String service = "warm";
    storeConfig(service, "{\"loadBalancingConfig\":[{\"weighted_random\":{\"slowStart\":{\"window\":\"10s\"}}}]}");
    GreeterServer a1 = greeter(service, "a");
    GreeterServer a2 = greeter(service, "a");
    greeter(service, "b");
    greeter(service, "b");
    callInBackground(service);
    GreeterGrpc.GreeterBlockingStub a = client("a", service);
    // The fleet's own ramps (its servers joined one after the other) end first.
    await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200))
        .until(() -> served(null, service).values().stream().filter(w -> w == 2).count() == 4);
    callUntil(a, 200, c -> sum(c, a1, a2) == 200);

    GreeterServer a3 = greeter(service, "a");
    long joined = System.nanoTime();
    // The ramp, second by second, for the table; the late share is read over a fixed number of
    // calls from 12 s on, not from single seconds, which a loaded machine fills with few calls.
    int seconds = 12;
    int lateCalls = 2_000;
    int[] total = new int[seconds];
    int[] mine = new int[seconds];
    for (long t = 0; t < TimeUnit.SECONDS.toNanos(seconds); t = System.nanoTime() - joined) {
      String answered = call(a);
      int bucket = (int) TimeUnit.NANOSECONDS.toSeconds(t);
      total[bucket]++;
      if (a3.address().equals(answered)) {
        mine[bucket]++;
      }
    }
    Map<String, Integer> late = calls(a, lateCalls);
    double full = 1.0 / 3; // a's calls all stay in a, over three servers of weight 2
    StringBuilder table = new StringBuilder("grpc-java zone a, new zone-a server, slowStart window 10s:\n"
        + "second  calls  to the new server  of its full share\n");
    for (int i = 0; i < seconds; i++) {
      double share = total[i] == 0 ? 0 : (double) mine[i] / total[i];
      table.append(String.format("%6d %6d %18.1f %% %17.0f %%%n", i, total[i], 100 * share, 100 * share / full));
    }
    double first2 = (double) (mine[0] + mine[1]) / (total[0] + total[1]);
    double fromTwelve = late.getOrDefault(a3.address(), 0) / (double) lateCalls;
    table.append(String.format("first 2 s: %.1f %% of its full share (%d calls); %,d calls from 12 s: %.1f %% of"
        + " the calls, %.1f %% of its full share %s", 100 * first2 / full, total[0] + total[1], lateCalls,
        100 * fromTwelve, 100 * fromTwelve / full, late));
    System.out.println(table);
    assertThat(first2).as(table.toString()).isLessThan(full / 3);
    assertThat(fromTwelve).as(table.toString()).isCloseTo(full, within(0.04));
  }

  @Test
  void zoneRoutingOffIsZoneBlindAndARefusedConfigKeepsTheLastGood() throws Exception {
    String service = "blind";
    GreeterServer a1 = greeter(service, "a");
    GreeterServer b1 = greeter(service, "b");
    callInBackground(service);
    GreeterGrpc.GreeterBlockingStub a = client("a", service);
    callUntil(a, 200, c -> sum(c, a1) == 200);

    storeConfig(service, "{\"loadBalancingConfig\":[{\"weighted_random\":{\"zoneRouting\":{\"enabled\":false}}}]}");
    callUntil(a, 400, c -> Math.abs(sum(c, a1) / 400.0 - 0.5) <= 0.1 && sum(c, b1) > 0);
    Map<String, Integer> blind = served("a", service);
    assertThat(blind).isEqualTo(served(null, service)).containsValues(2, 2);

    long refusedBefore = xds.publisher().refusedConfigs();
    storeConfig(service, "{\"loadBalancingConfig\":[{\"weighted_random\":{\"zoneRouting\":{\"minLocalEndpoints\":0}}}]}");
    await().atMost(Duration.ofSeconds(10)).until(() -> xds.publisher().refusedConfigs() == refusedBefore + 1);
    b1.setWeight(3); // a rebuild under the last good config: still zone-blind
    await().atMost(Duration.ofSeconds(10)).until(() -> served("a", service).containsValue(3));
    assertThat(served("a", service)).isEqualTo(served(null, service));
    Map<String, Integer> counts = calls(a, 1_000);
    assertThat(sum(counts, b1) / 1_000.0).as("%s", counts).isCloseTo(0.6, within(0.06));
  }
}
