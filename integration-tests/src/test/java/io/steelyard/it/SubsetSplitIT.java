package io.steelyard.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

import com.google.gson.Gson;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.steelyard.agent.ServiceRegistration;
import io.steelyard.examples.GreeterClient;
import io.steelyard.examples.GreeterServer;
import io.steelyard.examples.proto.GreeterGrpc;
import io.steelyard.examples.proto.HelloRequest;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Metadata selection (the {@code subset} and {@code split} keys) over real servers: greeters
 * registered in etcd with {@code version} metadata, a client whose policy config selects or
 * splits by it.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class SubsetSplitIT {

  private static final Logger log = LoggerFactory.getLogger(SubsetSplitIT.class);

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private static final String SERVICE = "canary";

  private static Greeters greeters;
  private static final List<ServiceRegistration> registrations = new ArrayList<>();
  /** v1 with weights 1 and 3, v2 with weight 1. */
  private static GreeterServer v1Light;
  private static GreeterServer v1Heavy;
  private static GreeterServer v2;

  private final List<ManagedChannel> channels = new ArrayList<>();

  @BeforeAll
  static void startServers() throws Exception {
    greeters = new Greeters(etcd.endpoints(), SERVICE);
    v1Light = register(1, "v1");
    v1Heavy = register(3, "v1");
    v2 = register(1, "v2");
  }

  /** A greeter registered as a sidecar would register it: by the agent, with its metadata. */
  private static GreeterServer register(int weight, String version) throws Exception {
    return register(SERVICE, weight, Map.of("version", version));
  }

  private static GreeterServer register(String service, int weight, Map<String, String> metadata)
      throws Exception {
    GreeterServer server = greeters.add(greeters.builder().register(false).build().start());
    ServiceRegistration registration =
        ServiceRegistration.builder(EtcdConnection.of(etcd.endpoints()), service, server.address())
            .weight(weight)
            .ttl(Duration.ofSeconds(5))
            .metadata(metadata)
            .build();
    registrations.add(registration);
    registration.start().get(30, TimeUnit.SECONDS);
    return server;
  }

  @AfterAll
  static void stopServers() {
    registrations.forEach(ServiceRegistration::close);
    if (greeters != null) {
      greeters.close();
    }
  }

  @AfterEach
  void closeChannels() throws InterruptedException {
    for (ManagedChannel channel : channels) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  /** A channel whose only config is {@code weighted_random} with {@code policyConfig}. */
  private GreeterGrpc.GreeterBlockingStub client(String policyConfig) {
    @SuppressWarnings("unchecked")
    Map<String, ?> serviceConfig = new Gson().fromJson(
        "{\"loadBalancingConfig\": [{\"weighted_random\": " + policyConfig + "}]}", Map.class);
    ManagedChannel channel =
        ManagedChannelBuilder.forTarget(GreeterClient.target(etcd.endpoints(), SERVICE))
            .usePlaintext()
            .disableServiceConfigLookUp()
            .defaultServiceConfig(serviceConfig)
            .build();
    channels.add(channel);
    return GreeterGrpc.newBlockingStub(channel);
  }

  /** Calls answered per server address, over {@code calls} calls. */
  private static Map<String, Integer> callsByServer(GreeterGrpc.GreeterBlockingStub stub, int calls) {
    Map<String, Integer> counts = new HashMap<>();
    for (int i = 0; i < calls; i++) {
      String message = stub.withDeadlineAfter(5, TimeUnit.SECONDS)
          .sayHello(HelloRequest.newBuilder().setName("it").build())
          .getMessage();
      String server = message.substring(message.lastIndexOf(' ') + 1);
      counts.merge(server, 1, Integer::sum);
    }
    return counts;
  }

  @Test
  void aNinetyTenSplitSendsTenPercentToV2AndKeepsWeightsInsideV1() {
    GreeterGrpc.GreeterBlockingStub stub = client("{\"split\": ["
        + "{\"selector\": {\"version\": \"v1\"}, \"percent\": 90},"
        + " {\"selector\": {\"version\": \"v2\"}, \"percent\": 10}]}").withWaitForReady();
    // Until every server is READY, a selection holds fewer endpoints than it will.
    await().atMost(Duration.ofSeconds(20)).until(() -> callsByServer(stub, 50).size() == 3);

    Map<String, Integer> counts = callsByServer(stub, 4_000);
    log.info("90/10 split over 4,000 calls: v1 weight 1 {}, v1 weight 3 {}, v2 {}",
        counts.get(v1Light.address()), counts.get(v1Heavy.address()), counts.get(v2.address()));

    // Binomial sd of the v2 share over 4,000 calls is 0.47 points: 2 points is over 4 sd.
    assertThat(counts.getOrDefault(v2.address(), 0) / 4_000.0).as("v2 share, %s", counts)
        .isCloseTo(0.10, within(0.02));
    int v1Calls = counts.getOrDefault(v1Light.address(), 0) + counts.getOrDefault(v1Heavy.address(), 0);
    assertThat(counts.getOrDefault(v1Heavy.address(), 0) / (double) v1Calls)
        .as("weight 3 of 4 inside v1, %s", counts)
        .isCloseTo(0.75, within(0.04));
  }

  @Test
  void aSelectorSendsEveryCallToItsSelection() {
    GreeterGrpc.GreeterBlockingStub stub =
        client("{\"subset\": {\"selector\": {\"version\": \"v2\"}, \"fallback\": \"none\"}}")
            .withWaitForReady();

    Map<String, Integer> counts = callsByServer(stub, 200);

    assertThat(counts).containsOnlyKeys(v2.address());
  }

  @Test
  void aSelectorMatchingNoServerFailsCallsWithFallbackNone() {
    GreeterGrpc.GreeterBlockingStub stub =
        client("{\"subset\": {\"selector\": {\"version\": \"v3\"}, \"fallback\": \"none\"}}");
    // Wait until the balancer has READY endpoints: before, calls fail for want of a connection.
    await().atMost(Duration.ofSeconds(20)).ignoreExceptions().until(() -> {
      try {
        callsByServer(stub, 1);
        return false;
      } catch (StatusRuntimeException e) {
        return e.getStatus().getDescription() != null
            && e.getStatus().getDescription().contains("{version=v3}");
      }
    });

    assertThatThrownBy(() -> callsByServer(stub, 1))
        .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
          assertThat(e.getStatus().getDescription())
              .isEqualTo("no READY endpoint matches selector {version=v3} (subset fallback: none)");
        });
  }

  @Test
  void aSelectorMatchingNoServerFallsBackToEveryServerWithFallbackAny() {
    GreeterGrpc.GreeterBlockingStub stub =
        client("{\"subset\": {\"selector\": {\"version\": \"v3\"}, \"fallback\": \"any\"}}")
            .withWaitForReady();

    await().atMost(Duration.ofSeconds(20)).until(() -> callsByServer(stub, 50).size() == 3);
  }

  @Test
  void eachSelectionOfASplitSetWithTheCliRoutesByTheCallersZone() throws Exception {
    String service = "canary-zones";
    GreeterServer v1InA = register(service, 1, Map.of("version", "v1", "zone", "a"));
    GreeterServer v1InB = register(service, 1, Map.of("version", "v1", "zone", "b"));
    GreeterServer v2InB = register(service, 1, Map.of("version", "v2", "zone", "b"));
    Cli.Result set = Cli.run(etcd.endpoints(), "config", "set", service,
        "{\"loadBalancingConfig\": [{\"weighted_random\": {\"split\": [\n"
            + "  {\"selector\": {\"version\": \"v1\"}, \"percent\": 50},\n"
            + "  {\"selector\": {\"version\": \"v2\"}, \"percent\": 50}]}}]}");
    assertThat(set.exitCode()).as("steelyard config set: %s", set.stderr()).isZero();
    // The registry's config, no config of the caller's own; the caller is in zone a.
    ManagedChannel channel =
        ManagedChannelBuilder.forTarget(GreeterClient.target(etcd.endpoints(), service) + "?zone=a")
            .usePlaintext()
            .build();
    channels.add(channel);
    GreeterGrpc.GreeterBlockingStub stub = GreeterGrpc.newBlockingStub(channel).withWaitForReady();
    // Until v1's zone-a server is READY, v1's calls go to zone b.
    await().atMost(Duration.ofSeconds(20))
        .until(() -> callsByServer(stub, 50).keySet().equals(Set.of(v1InA.address(), v2InB.address())));

    Map<String, Integer> counts = callsByServer(stub, 400);

    // v1 has a READY server in zone a, which carries v1's share: v1's calls stay local. v2 has
    // none there: its half crosses to zone b rather than going to v1.
    assertThat(counts.getOrDefault(v1InB.address(), 0)).as("v1 in zone b, %s", counts).isZero();
    // Binomial sd of a half over 400 calls is 2.5 points: 15 points is 6 sd.
    assertThat(counts.getOrDefault(v2InB.address(), 0) / 400.0).as("v2 share, %s", counts)
        .isCloseTo(0.5, within(0.15));
  }
}
