package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.registry.ValueCodec;
import io.steelyard.registry.ValueFormat;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** While etcd is down the control plane keeps serving the last view; when it is back, changes flow again. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class XdsOutageIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private static final Duration WAIT = Duration.ofSeconds(20);

  private static void register(String address, int weight) throws Exception {
    try (Client client = EtcdConnection.of(etcd.endpoints()).connect()) {
      client.getKVClient()
          .put(
              KeyLayout.defaults().instanceKeyBytes("outage", address),
              ByteSequence.from(ValueCodec.encode(ServiceInstance.of("outage", address, weight), ValueFormat.JSON)))
          .get(10, TimeUnit.SECONDS);
    }
  }

  @Test
  void keepsServingTheLastViewWhileEtcdIsDownAndResumes() throws Exception {
    register("10.5.0.1:50051", 2);
    List<String> names = List.of("outage");
    try (XdsServer xds = XdsServer.builder(EtcdConnection.of(etcd.endpoints())).port(0).build().start()) {
      await().atMost(WAIT).until(xds::serving);

      etcd.member(0).stop();
      await().atMost(WAIT).until(() -> xds.staleness().compareTo(Duration.ZERO) > 0);
      try (AdsProbe during = new AdsProbe(xds.port(), "during-outage")) {
        during.subscribe(AdsProbe.EDS, names);
        DiscoveryResponse r = during.next(WAIT);
        assertThat(weightIn(r)).as("the last view, served while etcd is down").isEqualTo(2);
      }

      etcd.member(0).start();
      try (AdsProbe after = new AdsProbe(xds.port(), "after-outage")) {
        after.subscribe(AdsProbe.EDS, names);
        after.ack(after.next(WAIT), names);
        register("10.5.0.1:50051", 5);
        assertThat(weightIn(after.next(WAIT))).isEqualTo(5);
        await().atMost(WAIT).until(() -> xds.staleness().isZero());
      }
    }
  }

  private static int weightIn(DiscoveryResponse r) throws Exception {
    return r.getResources(0).unpack(ClusterLoadAssignment.class).getEndpoints(0).getLoadBalancingWeight().getValue();
  }
}
