package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.PutOption;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.steelyard.examples.GreeterServer;
import io.steelyard.examples.proto.GreeterGrpc;
import io.steelyard.examples.proto.HelloRequest;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.registry.ValueCodec;
import io.steelyard.registry.ValueFormat;
import io.steelyard.testkit.EtcdCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * grpc-java's own xDS client ({@code grpc-xds}, through a bootstrap file) dials {@code
 * xds:///SERVICE} against the control plane, real etcd and real greeter servers: the calls split
 * as the registered weights say, follow a weight change and a drain within two seconds, and a
 * server whose lease expires leaves the assignment.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class XdsClientIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  @TempDir static Path dir;
  private static XdsServer xds;

  /** One control plane for the class: grpc-java reads its bootstrap file once per xDS client pool. */
  @BeforeAll
  static void startControlPlane() throws Exception {
    xds = XdsServer.builder(EtcdConnection.of(etcd.endpoints())).port(0).build().start();
    Path bootstrap = dir.resolve("bootstrap.json");
    Files.writeString(
        bootstrap,
        "{\"xds_servers\": [{\"server_uri\": \"127.0.0.1:" + xds.port() + "\","
            + " \"channel_creds\": [{\"type\": \"insecure\"}], \"server_features\": [\"xds_v3\"]}],"
            + " \"node\": {\"id\": \"xds-client-it\", \"locality\": {\"zone\": \"local\"}}}");
    System.setProperty("io.grpc.xds.bootstrap", bootstrap.toString());
  }

  @AfterAll
  static void stopControlPlane() {
    System.clearProperty("io.grpc.xds.bootstrap");
    xds.close();
  }

  private final List<AutoCloseable> closeables = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
  }

  private <T extends AutoCloseable> T closeLater(T c) {
    closeables.add(c);
    return c;
  }

  private GreeterServer greeter(String service, int weight) {
    GreeterServer server =
        QuickGreeters.builder(etcd, service).weight(weight).build().start();
    closeables.add(server::shutdownNow);
    return server;
  }

  /** A channel to {@code xds:///service}, through grpc-java's xDS client and the bootstrap file. */
  private GreeterGrpc.GreeterBlockingStub client(String service) {
    ManagedChannel channel =
        Grpc.newChannelBuilder("xds:///" + service, InsecureChannelCredentials.create()).build();
    closeables.add(() -> {
      channel.shutdownNow();
      channel.awaitTermination(5, TimeUnit.SECONDS);
    });
    return GreeterGrpc.newBlockingStub(channel);
  }

  private static String call(GreeterGrpc.GreeterBlockingStub stub) {
    return stub.withDeadlineAfter(5, TimeUnit.SECONDS)
        .sayHello(HelloRequest.newBuilder().setName("java").build())
        .getServerAddress();
  }

  private static Map<String, Integer> calls(GreeterGrpc.GreeterBlockingStub stub, int n) {
    Map<String, Integer> counts = new HashMap<>();
    for (int i = 0; i < n; i++) {
      counts.merge(call(stub), 1, Integer::sum);
    }
    return counts;
  }

  /** Calls until {@code done} holds for the last {@code window} calls; returns the time taken. */
  private static Duration callUntil(
      GreeterGrpc.GreeterBlockingStub stub, int window, java.util.function.Predicate<Map<String, Integer>> done) {
    long start = System.nanoTime();
    java.util.ArrayDeque<String> last = new java.util.ArrayDeque<>();
    Map<String, Integer> counts = new HashMap<>();
    while (true) {
      String a = call(stub);
      last.addLast(a);
      counts.merge(a, 1, Integer::sum);
      if (last.size() > window) {
        counts.merge(last.removeFirst(), -1, Integer::sum);
      }
      if (last.size() == window && done.test(counts)) {
        return Duration.ofNanos(System.nanoTime() - start);
      }
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(30));
    }
  }

  @Test
  void sharesFollowTheRegisteredWeightsAndAWeightChangeWithinTwoSeconds() throws Exception {
    GreeterServer a = greeter("shares", 1);
    GreeterServer b = greeter("shares", 3);
    GreeterGrpc.GreeterBlockingStub stub = client("shares");
    callUntil(stub, 100, c -> c.getOrDefault(a.address(), 0) > 0 && c.getOrDefault(b.address(), 0) > 0);

    Map<String, Integer> counts = calls(stub, 4_000);
    assertThat(counts.getOrDefault(a.address(), 0) / 4_000.0).as("share of weight 1 in %s", counts)
        .isCloseTo(0.25, within(0.03));

    a.setWeight(3);
    Duration moved = callUntil(stub, 400, c -> Math.abs(c.getOrDefault(a.address(), 0) / 400.0 - 0.5) <= 0.08);
    Map<String, Integer> after = calls(stub, 4_000);

    System.out.printf("grpc-java: weights 1:3 -> %s; 3:3 after %d ms -> %s%n", counts, moved.toMillis(), after);
    assertThat(moved).isLessThan(Duration.ofSeconds(2));
    assertThat(after.getOrDefault(a.address(), 0) / 4_000.0).as("share after 3:3 in %s", after)
        .isCloseTo(0.5, within(0.03));
  }

  @Test
  void aDrainedServerGetsNoNewCallsWithinTwoSeconds() throws Exception {
    GreeterServer a = greeter("drain", 1);
    GreeterServer b = greeter("drain", 1);
    GreeterGrpc.GreeterBlockingStub stub = client("drain");
    callUntil(stub, 100, c -> c.getOrDefault(a.address(), 0) > 0 && c.getOrDefault(b.address(), 0) > 0);

    b.setWeight(0);
    Duration gone = callUntil(stub, 200, c -> c.getOrDefault(b.address(), 0) == 0);
    Map<String, Integer> after = calls(stub, 1_000);

    System.out.printf("grpc-java: drain -> 200 calls in a row without the drained server %d ms after%n",
        gone.toMillis());
    assertThat(gone).isLessThan(Duration.ofSeconds(2));
    assertThat(after).containsOnlyKeys(a.address());
  }

  @Test
  void aServerWhoseLeaseExpiresLeavesTheAssignment() throws Exception {
    GreeterServer a = greeter("lease", 1);
    // b registers by hand on a lease nobody keeps alive: what a kill -9 leaves behind.
    GreeterServer b =
        closeLater(
            GreeterServer.builder().endpoints(etcd.endpoints()).service("lease").register(false).build().start());
    try (Client client = EtcdConnection.of(etcd.endpoints()).connect()) {
      long lease = client.getLeaseClient().grant(3).get(10, TimeUnit.SECONDS).getID();
      client.getKVClient()
          .put(
              KeyLayout.defaults().instanceKeyBytes("lease", b.address()),
              ByteSequence.from(ValueCodec.encode(ServiceInstance.of("lease", b.address(), 1), ValueFormat.JSON)),
              PutOption.builder().withLeaseId(lease).build())
          .get(10, TimeUnit.SECONDS);
    }
    GreeterGrpc.GreeterBlockingStub stub = client("lease");
    callUntil(stub, 50, c -> c.getOrDefault(b.address(), 0) > 0);

    long killedAt = System.nanoTime();
    b.shutdownNow();
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50))
        .until(() -> !endpointsOf("lease").contains(b.address()));
    System.out.printf("grpc-java: lease of 3 s expired: endpoint left EDS after %d ms%n",
        Duration.ofNanos(System.nanoTime() - killedAt).toMillis());
    assertThat(endpointsOf("lease")).containsExactly(a.address());
    assertThat(calls(stub, 200)).containsOnlyKeys(a.address());
  }

  private static List<String> endpointsOf(String service) {
    ClusterLoadAssignment cla = xds.publisher().current().endpoints().resources().get(service);
    List<String> out = new ArrayList<>();
    cla.getEndpointsList().forEach(l -> l.getLbEndpointsList().forEach(e -> out.add(
        e.getEndpoint().getAddress().getSocketAddress().getAddress() + ":"
            + e.getEndpoint().getAddress().getSocketAddress().getPortValue())));
    return out;
  }
}
