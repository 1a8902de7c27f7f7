package io.steelyard.discovery;

import static io.steelyard.discovery.Etcd.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The discovery meters after a scripted sequence against a real etcd, through a real channel:
 * instances, a weight change reaching the balancer, a malformed value, etcd stopped and started.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class DiscoveryMetricsIT {

  private static final String SERVICE = "metered-discovery";
  private static final String P = "/services/" + SERVICE + "/";

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private final MeterRegistry meters = new SimpleMeterRegistry();
  private final DiscoveryMetrics metrics = new DiscoveryMetrics();
  private ManagedChannel channel;

  @AfterEach
  void cleanUp() throws InterruptedException {
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    metrics.close();
    etcd.member(0).start();
    etcd.awaitHealthy(Duration.ofSeconds(30));
  }

  private double value(String name) {
    var search = meters.find(name).tag("service", SERVICE);
    return search.gauge() != null ? search.gauge().value() : search.functionCounter().count();
  }

  private long propagations() {
    var t = meters.find(DiscoveryMetrics.PROPAGATION).tag("service", SERVICE).timer();
    return t == null ? 0 : t.count();
  }

  @Test
  void metersFollowInstancesAWeightChangeAMalformedValueAndAnEtcdOutage() throws Exception {
    EtcdConnection connection = EtcdConnection.of(etcd.endpoints());
    try (Client client = connection.connect()) {
      put(client, P + "127.0.0.1:1", "127.0.0.1:1|2");
      put(client, P + "127.0.0.1:2", "127.0.0.1:2|1");
      metrics.bindTo(meters);
      channel = Grpc.newChannelBuilder("etcd:///" + SERVICE, InsecureChannelCredentials.create())
          .setNameResolverArg(EtcdNameResolverProvider.CONNECTION, connection)
          .defaultLoadBalancingPolicy("round_robin")
          .build();
      channel.getState(true); // leave idle: the resolver starts

      await().atMost(Duration.ofSeconds(10)).until(() -> meters.find(DiscoveryMetrics.INSTANCES)
          .tag("service", SERVICE).gauge() != null && value(DiscoveryMetrics.INSTANCES) == 2);
      assertThat(value(DiscoveryMetrics.STALE)).isZero();
      assertThat(value(DiscoveryMetrics.MALFORMED)).isZero();

      put(client, P + "127.0.0.1:1", "127.0.0.1:1|9"); // a weight change
      await().atMost(Duration.ofSeconds(10)).until(() -> propagations() >= 1);
      var timer = meters.get(DiscoveryMetrics.PROPAGATION).tag("service", SERVICE).timer();
      assertThat(timer.max(TimeUnit.SECONDS)).isLessThan(5); // generous: a shared, noisy machine

      put(client, P + "junk", "127.0.0.1:3|-1");
      await().atMost(Duration.ofSeconds(10)).until(() -> value(DiscoveryMetrics.MALFORMED) == 1);
      assertThat(value(DiscoveryMetrics.INSTANCES)).isEqualTo(2);
    }

    etcd.member(0).stop();
    await().atMost(Duration.ofSeconds(20)).until(() -> value(DiscoveryMetrics.STALE) > 0);
    assertThat(value(DiscoveryMetrics.INSTANCES)).as("stale-serving keeps the list").isEqualTo(2);
    etcd.member(0).start();
    await().atMost(Duration.ofSeconds(30)).until(() -> value(DiscoveryMetrics.STALE) == 0);

    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    await().atMost(Duration.ofSeconds(10))
        .until(() -> meters.find(DiscoveryMetrics.INSTANCES).tag("service", SERVICE).gauge() == null);
  }
}
