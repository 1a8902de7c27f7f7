package io.steelyard.discovery;

import static io.steelyard.discovery.Etcd.put;
import static org.assertj.core.api.Assertions.assertThat;

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
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A channel given its own {@link EtcdNameResolverProvider} as a name-resolver argument resolves
 * through it, not through the one in grpc's registry. (Weights from etcd steering a steelyard
 * balancer end to end: {@code WeightedChannelIT} in integration-tests.)
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CarriedProviderIT {

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
  void aChannelResolvesThroughTheProviderItCarriesInsteadOfTheRegistryOne() throws Exception {
    int a = startServer();
    // Registered under a prefix the registry's provider (default layout) never reads.
    EtcdNameResolverProvider own = EtcdNameResolverProvider.builder()
        .connection(EtcdConnection.of(etcd.endpoints()))
        .layout(io.steelyard.registry.KeyLayout.of("/own-prefix"))
        .build();
    try (Client writer = EtcdConnection.of(etcd.endpoints()).connect()) {
      put(writer, "/own-prefix/carried/127.0.0.1:" + a, "127.0.0.1:" + a + "|1");
      channel = Grpc.newChannelBuilder("etcd:///carried", InsecureChannelCredentials.create())
          .setNameResolverArg(EtcdNameResolverProvider.CHANNEL_PROVIDER, own)
          .build();
      HealthGrpc.HealthBlockingStub stub = HealthGrpc.newBlockingStub(channel).withWaitForReady();
      int[] c = callAndCount(stub, 3);
      assertThat(c[0]).isEqualTo(3);
    }
  }
}
