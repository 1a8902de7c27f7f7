package io.steelyard.discovery;

import static io.steelyard.discovery.Etcd.put;
import static org.assertj.core.api.Assertions.assertThat;

import io.etcd.jetcd.Client;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthGrpc;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.grpc.CountingHealthServers;
import java.util.concurrent.TimeUnit;
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
  void aChannelResolvesThroughTheProviderItCarriesInsteadOfTheRegistryOne() throws Exception {
    int a = servers.start();
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
      int[] c = servers.callAndCount(stub, 3);
      assertThat(c[0]).isEqualTo(3);
    }
  }
}
