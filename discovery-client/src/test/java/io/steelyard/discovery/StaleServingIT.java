package io.steelyard.discovery;

import static io.steelyard.discovery.Etcd.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.grpc.CountingHealthServers;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The availability promise, literally: etcd stopped for 30 s under a steady stream of
 * calls through {@code etcd:} + {@code round_robin} to real servers, and not one call fails.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class StaleServingIT {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  private final CountingHealthServers servers = new CountingHealthServers();
  private final ScheduledExecutorService caller = Executors.newSingleThreadScheduledExecutor();
  private ManagedChannel channel;

  @AfterEach
  void tearDown() throws InterruptedException {
    caller.shutdownNow();
    caller.awaitTermination(5, TimeUnit.SECONDS);
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    servers.close();
    etcd.member(0).start();
  }

  @Test
  void etcdStoppedForThirtySecondsFailsNoCallAndChangesFlowAfterRestart() throws Exception {
    int p1 = servers.start();
    int p2 = servers.start();
    try (Client writer = EtcdConnection.of(etcd.endpoints()).connect()) {
      put(writer, "/services/stale/127.0.0.1:" + p1, "127.0.0.1:" + p1 + "|1");
      put(writer, "/services/stale/127.0.0.1:" + p2, "127.0.0.1:" + p2 + "|1");
    }
    channel = Grpc.newChannelBuilder(
            "etcd://" + etcd.endpoints().replace("http://", "") + "/stale", InsecureChannelCredentials.create())
        .defaultLoadBalancingPolicy("round_robin")
        .build();
    HealthGrpc.HealthBlockingStub stub = HealthGrpc.newBlockingStub(channel);
    AtomicInteger ok = new AtomicInteger();
    AtomicInteger failed = new AtomicInteger();
    AtomicReference<Throwable> firstFailure = new AtomicReference<>();
    caller.scheduleAtFixedRate(() -> {
      try {
        HealthCheckResponse r = stub.withDeadlineAfter(2, TimeUnit.SECONDS)
            .check(HealthCheckRequest.getDefaultInstance());
        if (r.getStatus() == HealthCheckResponse.ServingStatus.SERVING) {
          ok.incrementAndGet();
        }
      } catch (RuntimeException e) {
        failed.incrementAndGet();
        firstFailure.compareAndSet(null, e);
      }
    }, 0, 20, TimeUnit.MILLISECONDS);

    await().atMost(Duration.ofSeconds(15)).until(() -> servers.served(0) > 0 && servers.served(1) > 0);
    assertThat(failed).hasValue(0);

    etcd.member(0).stop();
    await().atMost(Duration.ofSeconds(10)).until(() -> DiscoveryStats.staleWatches() == 1);
    int okBefore = ok.get();
    await().during(Duration.ofSeconds(30)).atMost(Duration.ofSeconds(40))
        .untilAsserted(() -> assertThat(failed.get()).as("failed calls, first: %s", firstFailure.get()).isZero());
    assertThat(ok.get() - okBefore).as("calls made while etcd was down").isGreaterThan(300);
    assertThat(DiscoveryStats.staleWatches()).isEqualTo(1);
    assertThat(DiscoveryStats.maxStaleness()).isGreaterThanOrEqualTo(Duration.ofSeconds(25));

    etcd.member(0).start();
    // Seconds, not the ~2 min the gRPC channel under jetcd may back off to: the watcher
    // renews its client and treats an unconfirmed watch as failed.
    await().atMost(Duration.ofSeconds(12)).until(() -> DiscoveryStats.staleWatches() == 0);
    int p3 = servers.start();
    try (Client writer = EtcdConnection.of(etcd.endpoints()).connect()) {
      put(writer, "/services/stale/127.0.0.1:" + p3, "127.0.0.1:" + p3 + "|1");
    }
    await().atMost(Duration.ofSeconds(10)).until(() -> servers.served(2) > 0);
    assertThat(failed.get()).as("failed calls, first: %s", firstFailure.get()).isZero();
  }

  @Test
  void hostNameAddressesAreResolvedByTheTransport() throws Exception {
    int port = servers.start();
    try (Client writer = EtcdConnection.of(etcd.endpoints()).connect()) {
      put(writer, "/services/byname/localhost:" + port, "localhost:" + port + "|1");
    }
    AtomicInteger offloaded = new AtomicInteger();
    ExecutorService offload = Executors.newSingleThreadExecutor();
    channel = Grpc.newChannelBuilder(
            "etcd://" + etcd.endpoints().replace("http://", "") + "/byname", InsecureChannelCredentials.create())
        .defaultLoadBalancingPolicy("round_robin")
        .offloadExecutor(task -> {
          offloaded.incrementAndGet();
          offload.execute(task);
        })
        .build();
    HealthCheckResponse r = HealthGrpc.newBlockingStub(channel)
        .withWaitForReady()
        .withDeadlineAfter(10, TimeUnit.SECONDS)
        .check(HealthCheckRequest.getDefaultInstance());
    assertThat(r.getStatus()).isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
    assertThat(servers.served(0)).isEqualTo(1);
    // The lookup ran on the channel's offload executor, as grpc's own DNS resolver does.
    assertThat(offloaded.get()).isPositive();
    offload.shutdown();
  }
}
