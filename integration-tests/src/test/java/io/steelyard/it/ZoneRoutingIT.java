package io.steelyard.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.steelyard.examples.GreeterClient;
import io.steelyard.examples.GreeterServer;
import io.steelyard.examples.proto.GreeterGrpc;
import io.steelyard.examples.proto.HelloRequest;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Zone-aware routing over real greeter servers registered in two zones with {@code .zone()}, and
 * a caller that names its zone in the target ({@code ?zone=a}): its calls stay in zone a, and
 * reach zone b when zone a is drained or falls below {@code minLocalEndpoints}.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class ZoneRoutingIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private Greeters greeters;
  private ManagedChannel channel;

  @AfterEach
  void tearDown() throws InterruptedException {
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    if (greeters != null) {
      greeters.close();
    }
  }

  /** Two servers in zone a (weights 1, 2) and two in zone b (1, 2); a first, then b. */
  private List<GreeterServer> twoZones(String service) {
    greeters = new Greeters(etcd.endpoints(), service);
    return List.of(
        greeters.add(greeters.builder().weight(1).zone("a").build().start()),
        greeters.add(greeters.builder().weight(2).zone("a").build().start()),
        greeters.add(greeters.builder().weight(1).zone("b").build().start()),
        greeters.add(greeters.builder().weight(2).zone("b").build().start()));
  }

  private GreeterGrpc.GreeterBlockingStub callerInZoneA(String service, String policyConfig) {
    String target = GreeterClient.target(etcd.endpoints(), service) + "?zone=a";
    channel =
        Grpc.newChannelBuilder(target, InsecureChannelCredentials.create())
            // The caller's own config wins only without lookups: else the resolver's fallback
            // (weighted_random, no options) applies while the registry holds no config.
            .disableServiceConfigLookUp()
            .defaultServiceConfig(
                Map.of("loadBalancingConfig", List.of(Map.of(
                    policyConfig.split(":")[0],
                    policyConfig.contains(":")
                        ? Map.of("zoneRouting", Map.of("minLocalEndpoints", 2.0))
                        : Map.of()))))
            .build();
    return GreeterGrpc.newBlockingStub(channel).withWaitForReady();
  }

  /** Calls answered per backend address over {@code calls} sequential calls (low load). */
  private static Map<String, Integer> callsByBackend(GreeterGrpc.GreeterBlockingStub stub, int calls) {
    Map<String, Integer> out = new HashMap<>();
    for (int i = 0; i < calls; i++) {
      String backend = stub.withDeadlineAfter(5, TimeUnit.SECONDS)
          .sayHello(HelloRequest.newBuilder().setName("zone").build())
          .getServerAddress();
      out.merge(backend, 1, Integer::sum);
    }
    return out;
  }

  private static int callsTo(Map<String, Integer> counts, List<GreeterServer> servers) {
    return servers.stream().mapToInt(s -> counts.getOrDefault(s.address(), 0)).sum();
  }

  @ParameterizedTest
  @ValueSource(strings = {"weighted_random", "weighted_round_robin_static", "weighted_least_request"})
  void aCallerInZoneAStaysInZoneAAtLowLoad(String policy) {
    List<GreeterServer> all = twoZones("local-" + policy.replace('_', '-'));
    GreeterGrpc.GreeterBlockingStub stub = callerInZoneA(all.get(0).service(), policy);
    // Zone a's servers READY in the caller's balancer before counting. (Not "both answered":
    // sequential calls keep weighted_least_request on the idle larger one.)
    await().atMost(Duration.ofSeconds(20))
        .until(() -> callsTo(callsByBackend(stub, 20), all.subList(0, 2)) == 20);

    Map<String, Integer> counts = callsByBackend(stub, 600);

    int local = callsTo(counts, all.subList(0, 2));
    assertThat(local).as("calls in zone a: %s", counts).isGreaterThanOrEqualTo(570); // >= 95 %
  }

  @Test
  void aDrainedLocalZoneSpillsToTheOtherZone() throws Exception {
    List<GreeterServer> all = twoZones("drained");
    GreeterGrpc.GreeterBlockingStub stub = callerInZoneA("drained", "weighted_random");
    await().atMost(Duration.ofSeconds(20))
        .until(() -> callsTo(callsByBackend(stub, 20), all.subList(0, 2)) == 20);

    for (GreeterServer local : all.subList(0, 2)) {
      Cli.Result r = Cli.run(etcd.endpoints(), "drain", "drained", local.address());
      assertThat(r.exitCode()).as("steelyard drain: %s", r.stderr()).isZero();
    }

    await().atMost(Duration.ofSeconds(10))
        .until(() -> callsTo(callsByBackend(stub, 20), all.subList(2, 4)) == 20);
    Map<String, Integer> counts = callsByBackend(stub, 300);
    assertThat(callsTo(counts, all.subList(2, 4))).as("calls in zone b: %s", counts).isEqualTo(300);
  }

  @Test
  void belowMinLocalEndpointsCallsReachEveryZone() {
    List<GreeterServer> all = twoZones("below-min");
    GreeterGrpc.GreeterBlockingStub stub =
        callerInZoneA("below-min", "weighted_random:minLocalEndpoints");
    await().atMost(Duration.ofSeconds(20))
        .until(() -> callsTo(callsByBackend(stub, 20), all.subList(0, 2)) == 20);

    all.get(1).shutdownNow(); // zone a keeps one READY endpoint, below the minimum of 2

    await().atMost(Duration.ofSeconds(15))
        .until(() -> callsTo(callsByBackend(stub, 40), all.subList(2, 4)) > 0);
    Map<String, Integer> counts = callsByBackend(stub, 400);
    // Zone-blind over the three left, weights 1 (a), 1 and 2 (b): zone b gets 3/4.
    assertThat(callsTo(counts, all.subList(2, 4))).as("calls in zone b: %s", counts)
        .isBetween(240, 360);
    assertThat(counts.getOrDefault(all.get(0).address(), 0)).as("calls to a's survivor").isPositive();
  }
}
