package io.steelyard.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthGrpc;
import io.steelyard.balancer.WeightedRoundRobinStaticLoadBalancerProvider;
import io.steelyard.discovery.EtcdNameResolverProvider;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.grpc.CountingHealthServers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The weight attribute contract end to end: an etcd value, the {@code etcd} resolver writing
 * {@code EndpointWeights}, steelyard's balancer reading it; a weight change shifts the traffic.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class WeightedChannelIT {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  private final CountingHealthServers servers = new CountingHealthServers();
  private ManagedChannel channel;

  @AfterEach
  void tearDown() throws InterruptedException {
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    servers.close();
  }

  @Test
  void weightsFromEtcdSteerTrafficAndAWeightChangeShiftsIt() throws Exception {
    int a = servers.start();
    int b = servers.start();
    String policy = new WeightedRoundRobinStaticLoadBalancerProvider().getPolicyName();
    try (Client writer = EtcdConnection.of(etcd.endpoints()).connect()) {
      put(writer, "/services/weighted/127.0.0.1:" + a, "127.0.0.1:" + a + "|1");
      put(writer, "/services/weighted/127.0.0.1:" + b, "127.0.0.1:" + b + "|3");
      channel = Grpc.newChannelBuilder(
              "etcd://" + etcd.endpoints().replace("http://", "") + "/weighted",
              InsecureChannelCredentials.create())
          .defaultLoadBalancingPolicy(policy)
          // This channel's own policy while the registry holds no config, not weighted_random.
          .setNameResolverArg(EtcdNameResolverProvider.FALLBACK_SERVICE_CONFIG, Map.of())
          .build();
      HealthGrpc.HealthBlockingStub stub = HealthGrpc.newBlockingStub(channel).withWaitForReady();
      // Both endpoints READY before counting: until then only the first one can be picked.
      await().atMost(Duration.ofSeconds(10)).until(() -> {
        int[] c = servers.callAndCount(stub, 8);
        return c[0] > 0 && c[1] > 0;
      });
      int[] before = servers.callAndCount(stub, 400);
      assertThat(before[1]).as("weight 3 vs 1: %s", java.util.Arrays.toString(before)).isBetween(280, 320);

      put(writer, "/services/weighted/127.0.0.1:" + a, "127.0.0.1:" + a + "|3");
      put(writer, "/services/weighted/127.0.0.1:" + b, "127.0.0.1:" + b + "|1");
      await().atMost(Duration.ofSeconds(10)).until(() -> {
        int[] c = servers.callAndCount(stub, 40);
        return c[0] >= 28 && c[1] <= 12;
      });
      int[] after = servers.callAndCount(stub, 400);
      assertThat(after[0]).as("weight 3 vs 1: %s", java.util.Arrays.toString(after)).isBetween(280, 320);
    }
  }

  private static void put(Client client, String key, String value) throws Exception {
    client.getKVClient()
        .put(ByteSequence.from(key, StandardCharsets.UTF_8), ByteSequence.from(value, StandardCharsets.UTF_8))
        .get(10, TimeUnit.SECONDS);
  }
}
