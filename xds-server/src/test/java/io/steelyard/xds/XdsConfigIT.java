package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.NameResolverRegistry;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.xds.XdsNameResolverProvider;
import io.steelyard.examples.GreeterFaults;
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
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;

/**
 * The stored service config as grpc-java's own xDS client ({@code grpc-xds}) gets it from the
 * control plane, against real etcd and real greeter servers: a canary split and its move, outlier
 * detection of a server failing half its calls, a method timeout, and a config with a part xDS
 * has no form for. One control plane and one xDS client (no locality) serve every case.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class XdsConfigIT {

  private static final String SCHEME = "xds-config-it";

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private static XdsServer xds;
  private static XdsNameResolverProvider provider;

  @BeforeAll
  static void startControlPlane() {
    xds = XdsServer.builder(EtcdConnection.of(etcd.endpoints())).port(0).build().start();
    Map<String, Object> bootstrap = Map.of(
        "xds_servers", List.of(Map.of(
            "server_uri", "127.0.0.1:" + xds.port(),
            "channel_creds", List.of(Map.of("type", "insecure")),
            "server_features", List.of("xds_v3"))),
        "node", Map.of("id", "config-it"));
    provider = XdsNameResolverProvider.createForTest(SCHEME, bootstrap);
    NameResolverRegistry.getDefaultRegistry().register(provider);
  }

  @AfterAll
  static void stopControlPlane() {
    NameResolverRegistry.getDefaultRegistry().deregister(provider);
    xds.close();
  }

  private final List<AutoCloseable> closeables = new ArrayList<>();

  @AfterEach
  void closeAll() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
  }

  private GreeterServer greeter(String service, Map<String, String> metadata, GreeterFaults faults) {
    GreeterServer server =
        QuickGreeters.builder(etcd, service).metadata(metadata).faults(faults).build().start();
    closeables.add(server::shutdownNow);
    return server;
  }

  private GreeterGrpc.GreeterBlockingStub client(String service) {
    ManagedChannel channel =
        Grpc.newChannelBuilder(SCHEME + ":///" + service, InsecureChannelCredentials.create()).build();
    closeables.add(() -> {
      channel.shutdownNow();
      channel.awaitTermination(5, TimeUnit.SECONDS);
    });
    return GreeterGrpc.newBlockingStub(channel);
  }

  /** The address that answered, or the status code's name of a failed call. */
  private static String call(GreeterGrpc.GreeterBlockingStub stub) {
    try {
      return stub.withDeadlineAfter(5, TimeUnit.SECONDS)
          .sayHello(HelloRequest.newBuilder().setName("java").build())
          .getServerAddress();
    } catch (StatusRuntimeException e) {
      return e.getStatus().getCode().name();
    }
  }

  /** Calls per answering address, failed calls under their code's name. */
  private static Map<String, Integer> calls(GreeterGrpc.GreeterBlockingStub stub, int n) {
    Map<String, Integer> counts = new TreeMap<>();
    for (int i = 0; i < n; i++) {
      counts.merge(call(stub), 1, Integer::sum);
    }
    return counts;
  }

  /** Calls until {@code done} holds for the last {@code window} calls, within 30 s. */
  private static void callUntil(GreeterGrpc.GreeterBlockingStub stub, int window, Predicate<Map<String, Integer>> done) {
    ArrayDeque<String> last = new ArrayDeque<>();
    Map<String, Integer> counts = new HashMap<>();
    await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ZERO).pollDelay(Duration.ZERO).until(() -> {
      String a = call(stub);
      last.addLast(a);
      counts.merge(a, 1, Integer::sum);
      if (last.size() > window) {
        counts.merge(last.removeFirst(), -1, Integer::sum);
      }
      return last.size() == window && done.test(counts);
    });
  }

  private static int sum(Map<String, Integer> counts, GreeterServer... servers) {
    int n = 0;
    for (GreeterServer s : servers) {
      n += counts.getOrDefault(s.address(), 0);
    }
    return n;
  }

  private static int failed(Map<String, Integer> counts) {
    return counts.entrySet().stream().filter(e -> !e.getKey().contains(":")).mapToInt(Map.Entry::getValue).sum();
  }

  private static void storeConfig(String service, String json) throws Exception {
    try (Client client = EtcdConnection.of(etcd.endpoints()).connect()) {
      client.getKVClient()
          .put(ByteSequence.from(KeyLayout.defaults().serviceConfigKey(service), StandardCharsets.UTF_8),
              ByteSequence.from(json, StandardCharsets.UTF_8))
          .get(10, TimeUnit.SECONDS);
    }
  }

  private static String split(int v1, int v2) {
    return "{\"loadBalancingConfig\":[{\"weighted_random\":{\"split\":["
        + "{\"selector\":{\"version\":\"v1\"},\"percent\":" + v1 + "},"
        + "{\"selector\":{\"version\":\"v2\"},\"percent\":" + v2 + "}]}}]}";
  }

  @Test
  void aSplitSendsItsShareToTheCanaryAndMovesWhenTheConfigChanges() throws Exception {
    String service = "canary";
    GreeterServer v1a = greeter(service, Map.of("version", "v1"), GreeterFaults.NONE);
    GreeterServer v1b = greeter(service, Map.of("version", "v1"), GreeterFaults.NONE);
    GreeterServer v2 = greeter(service, Map.of("version", "v2"), GreeterFaults.NONE);
    storeConfig(service, split(90, 10));
    GreeterGrpc.GreeterBlockingStub stub = client(service);
    callUntil(stub, 200, c -> sum(c, v2) > 0 && sum(c, v1a) > 0 && sum(c, v1b) > 0);

    Map<String, Integer> ninety = calls(stub, 4_000);
    System.out.printf("grpc-java split 90/10: v2 %.1f %% of 4,000 %s%n", 100.0 * sum(ninety, v2) / 4_000, ninety);
    assertThat(sum(ninety, v2) / 4_000.0).as("%s", ninety).isCloseTo(0.10, within(0.02));

    storeConfig(service, split(50, 50));
    long written = System.nanoTime();
    callUntil(stub, 200, c -> Math.abs(sum(c, v2) / 200.0 - 0.5) <= 0.05);
    long reachedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - written);
    await().pollDelay(Duration.ofMillis(Math.max(0, 2_000 - reachedMillis))).until(() -> true);
    Map<String, Integer> fifty = calls(stub, 4_000);
    System.out.printf("grpc-java split 50/50: a 200-call window within 5 points %d ms after the write;"
        + " from 2 s after it, v2 %.1f %% of 4,000 %s%n", reachedMillis, 100.0 * sum(fifty, v2) / 4_000, fifty);
    assertThat(reachedMillis).isLessThanOrEqualTo(2_000);
    assertThat(sum(fifty, v2) / 4_000.0).as("%s", fifty).isCloseTo(0.50, within(0.03));
    assertThat(failed(ninety) + failed(fifty)).isZero();
  }

  @Test
  void weightedLeastRequestTravelsWithoutLosingTheRegisteredWeights() throws Exception {
    String service = "least";
    GreeterServer light = QuickGreeters.builder(etcd, service).weight(1).build().start();
    closeables.add(light::shutdownNow);
    GreeterServer heavy = QuickGreeters.builder(etcd, service).weight(3).build().start();
    closeables.add(heavy::shutdownNow);
    storeConfig(service, "{\"loadBalancingConfig\":[{\"weighted_least_request\":{\"choiceCount\":2}}]}");
    await().atMost(Duration.ofSeconds(10)).until(() -> xds.publisher().current() != null
        && xds.publisher().current().services().containsKey(service)
        && xds.publisher().current().services().get(service).cluster().resource().hasLoadBalancingPolicy());
    GreeterGrpc.GreeterBlockingStub stub = client(service);
    callUntil(stub, 200, c -> sum(c, light) > 0 && sum(c, heavy) > 0);

    Map<String, Integer> counts = calls(stub, 4_000);
    System.out.printf("grpc-java weighted_least_request over weights 1:3: weight 1 took %.1f %% of 4,000 %s,"
        + " NACKs %.0f%n", 100.0 * sum(counts, light) / 4_000, counts, xds.metrics().nacks());
    // wrr_locality over least_request_experimental: the locality weights still carry 1:3.
    assertThat(sum(counts, light) / 4_000.0).as("%s", counts).isCloseTo(0.25, within(0.03));
    assertThat(xds.metrics().nacks()).isZero();
  }

  @Test
  void outlierDetectionEjectsAServerFailingHalfItsCalls() throws Exception {
    String service = "outliers";
    List<GreeterServer> healthy = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      healthy.add(greeter(service, Map.of(), GreeterFaults.NONE));
    }
    GreeterServer failing = greeter(service, Map.of(), new GreeterFaults(50, Duration.ZERO));
    GreeterGrpc.GreeterBlockingStub stub = client(service);
    callUntil(stub, 200, c -> sum(c, failing) > 0 && sum(c, healthy.toArray(GreeterServer[]::new)) > 150);

    // Java makes a thousand or more calls a second: 4,000 calls span a few ejection intervals.
    int n = 4_000;
    Map<String, Integer> without = calls(stub, n);
    storeConfig(service, "{\"loadBalancingConfig\":[{\"outlier_detection_experimental\":{"
        + "\"interval\":\"0.5s\",\"baseEjectionTime\":\"30s\",\"maxEjectionTime\":\"60s\",\"maxEjectionPercentage\":25,"
        + "\"failurePercentageEjection\":{\"threshold\":30,\"enforcementPercentage\":100,\"minimumHosts\":3,"
        + "\"requestVolume\":10},\"childPolicy\":[{\"weighted_random\":{}}]}}]}");
    Map<String, Integer> with = calls(stub, n); // from the write: ejection happens in this interval
    callUntil(stub, 200, c -> sum(c, failing) == 0);
    Map<String, Integer> ejected = calls(stub, 2_000);
    double weighted = 0.25; // four servers of weight 1
    System.out.printf("grpc-java outlier detection, 4 servers, one failing 50 %%: without it %d of %d failed (%s);"
        + " %d calls from the write: %d failed (%s); once ejected the failing server takes %.1f %% (%s)%n",
        failed(without), n, without, n, failed(with), with, 100.0 * sum(ejected, failing) / 2_000, ejected);
    assertThat(sum(ejected, failing) / 2_000.0).as("%s", ejected).isLessThan(weighted / 3);
    assertThat(failed(with)).as("failed with %s, without %s", with, without).isLessThan(failed(without));
  }

  @Test
  void aStoredMethodTimeoutEndsASlowCallAndAnUnmappedPartIsLoggedOnce() throws Exception {
    String service = "slow";
    GreeterServer slow = greeter(service, Map.of(), new GreeterFaults(0, Duration.ofSeconds(1)));
    GreeterGrpc.GreeterBlockingStub stub = client(service);
    assertThat(call(stub)).isEqualTo(slow.address()); // 1 s late, within the call's own 5 s

    // (vi) A 200 ms timeout for the greeter method: the client ends the call itself.
    String timeout = "\"methodConfig\":[{\"name\":[{\"service\":\"steelyard.examples.Greeter\","
        + "\"method\":\"SayHello\"}],\"timeout\":\"0.2s\"}]";
    storeConfig(service, "{" + timeout + "}");
    callUntil(stub, 3, c -> c.getOrDefault(Status.Code.DEADLINE_EXCEEDED.name(), 0) == 3);
    long start = System.nanoTime();
    String answer = call(stub);
    long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    System.out.printf("grpc-java stored timeout 0.2s, server answering in 1 s: %s after %d ms%n", answer, tookMillis);
    assertThat(answer).isEqualTo(Status.Code.DEADLINE_EXCEEDED.name());

    // (vii) A part without an xDS form: one log line for the revision, the timeout still served.
    Logger publisherLog = (Logger) LoggerFactory.getLogger(XdsPublisher.class);
    ListAppender<ILoggingEvent> lines = new ListAppender<>();
    lines.start();
    publisherLog.addAppender(lines);
    closeables.add(() -> publisherLog.detachAppender(lines));
    long unmappedBefore = xds.publisher().partlyMappedConfigs();
    storeConfig(service, "{" + timeout + ",\"retryThrottling\":{\"maxTokens\":10,\"tokenRatio\":0.5}}");
    await().atMost(Duration.ofSeconds(10)).until(() -> xds.publisher().partlyMappedConfigs() == unmappedBefore + 1);
    slow.setWeight(2); // a rebuild of the same revision: not logged again
    await().atMost(Duration.ofSeconds(10)).until(() -> xds.publisher().current().services().get(service)
        .assignment().resource().getEndpoints(0).getLoadBalancingWeight().getValue() == 2);
    List<String> logged = lines.list.stream().map(ILoggingEvent::getFormattedMessage)
        .filter(m -> m.contains("served without")).toList();
    System.out.println("steelyard-xds on a config with retryThrottling: " + logged);
    assertThat(logged).singleElement().asString().contains("served without retryThrottling");
    assertThat(call(stub)).isEqualTo(Status.Code.DEADLINE_EXCEEDED.name());

    // A refused config keeps the last good one in force.
    long refusedBefore = xds.publisher().refusedConfigs();
    storeConfig(service, "{\"methodConfig\":[{\"name\":[{}],\"timeout\":\"soon\"}]}");
    await().atMost(Duration.ofSeconds(10)).until(() -> xds.publisher().refusedConfigs() == refusedBefore + 1);
    assertThat(call(stub)).isEqualTo(Status.Code.DEADLINE_EXCEEDED.name());
  }
}
