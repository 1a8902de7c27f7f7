package io.steelyard.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.InsecureServerCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.protobuf.services.HealthStatusManager;
import io.steelyard.balancer.WeightedRoundRobinStaticLoadBalancerProvider;
import io.steelyard.discovery.EtcdNameResolverProvider;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
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

  private final List<Server> servers = new ArrayList<>();
  private final List<AtomicInteger> served = new ArrayList<>();
  private ManagedChannel channel;

  @AfterEach
  void tearDown() throws InterruptedException {
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    for (Server s : servers) {
      s.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  private int startServer() throws IOException {
    AtomicInteger count = new AtomicInteger();
    ServerInterceptor counting = new ServerInterceptor() {
      @Override
      public <Q, R> ServerCall.Listener<Q> interceptCall(
          ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        count.incrementAndGet();
        return next.startCall(call, headers);
      }
    };
    Server s = Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create())
        .addService(ServerInterceptors.intercept(new HealthStatusManager().getHealthService(), counting))
        .build()
        .start();
    servers.add(s);
    served.add(count);
    return ((InetSocketAddress) s.getListenSockets().get(0)).getPort();
  }

  private int[] callAndCount(HealthGrpc.HealthBlockingStub stub, int calls) {
    int a0 = served.get(0).get();
    int b0 = served.size() > 1 ? served.get(1).get() : 0;
    for (int i = 0; i < calls; i++) {
      stub.withDeadlineAfter(5, TimeUnit.SECONDS).check(HealthCheckRequest.getDefaultInstance());
    }
    return new int[] {
        served.get(0).get() - a0, served.size() > 1 ? served.get(1).get() - b0 : 0};
  }

  @Test
  void weightsFromEtcdSteerTrafficAndAWeightChangeShiftsIt() throws Exception {
    int a = startServer();
    int b = startServer();
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
        int[] c = callAndCount(stub, 8);
        return c[0] > 0 && c[1] > 0;
      });
      int[] before = callAndCount(stub, 400);
      assertThat(before[1]).as("weight 3 vs 1: %s", java.util.Arrays.toString(before)).isBetween(280, 320);

      put(writer, "/services/weighted/127.0.0.1:" + a, "127.0.0.1:" + a + "|3");
      put(writer, "/services/weighted/127.0.0.1:" + b, "127.0.0.1:" + b + "|1");
      await().atMost(Duration.ofSeconds(10)).until(() -> {
        int[] c = callAndCount(stub, 40);
        return c[0] >= 28 && c[1] <= 12;
      });
      int[] after = callAndCount(stub, 400);
      assertThat(after[0]).as("weight 3 vs 1: %s", java.util.Arrays.toString(after)).isBetween(280, 320);
    }
  }

  private static void put(Client client, String key, String value) throws Exception {
    client.getKVClient()
        .put(ByteSequence.from(key, StandardCharsets.UTF_8), ByteSequence.from(value, StandardCharsets.UTF_8))
        .get(10, TimeUnit.SECONDS);
  }
}
