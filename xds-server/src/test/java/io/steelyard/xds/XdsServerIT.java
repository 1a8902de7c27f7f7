package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.registry.ValueCodec;
import io.steelyard.registry.ValueFormat;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The control plane against real etcd and hand-driven ADS streams: a NACK from one client leaves
 * the others served, two replicas serve the same versions, services appear as they register, and
 * a change reaches only the clients of the service that changed.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class XdsServerIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private static final Duration WAIT = Duration.ofSeconds(15);
  private static Client client;

  @BeforeAll
  static void connect() {
    client = EtcdConnection.of(etcd.endpoints()).connect();
  }

  @AfterAll
  static void disconnect() {
    client.close();
  }

  static void register(String service, String address, int weight) throws Exception {
    register(client, service, address, weight);
  }

  /** Puts an instance of {@code service} into the registry, as an agent would. */
  static void register(Client client, String service, String address, int weight) throws Exception {
    client.getKVClient()
        .put(
            KeyLayout.defaults().instanceKeyBytes(service, address),
            ByteSequence.from(ValueCodec.encode(ServiceInstance.of(service, address, weight), ValueFormat.JSON)))
        .get(10, TimeUnit.SECONDS);
  }

  private static XdsServer xds() {
    return XdsServer.builder(EtcdConnection.of(etcd.endpoints())).port(0).build().start();
  }

  private static int weightIn(DiscoveryResponse r) throws Exception {
    return r.getResources(0).unpack(ClusterLoadAssignment.class).getEndpoints(0).getLoadBalancingWeight().getValue();
  }

  @Test
  void aClientRejectingAResponseDoesNotStopTheOthers() throws Exception {
    register("nack", "10.1.0.1:50051", 1);
    List<String> names = List.of("nack");
    try (XdsServer xds = xds();
        AdsProbe rejecting = new AdsProbe(xds.port(), "rejecting-node");
        AdsProbe accepting = new AdsProbe(xds.port(), "accepting-node")) {
      rejecting.subscribe(AdsProbe.EDS, names);
      accepting.subscribe(AdsProbe.EDS, names);
      DiscoveryResponse first = rejecting.next(WAIT);
      accepting.ack(accepting.next(WAIT), names);
      rejecting.nack(first, names, "", "weights look wrong to me");
      assertThat(rejecting.poll(Duration.ofSeconds(1))).as("the rejected resources sent again").isNull();

      register("nack", "10.1.0.1:50051", 2);

      DiscoveryResponse accepted = accepting.next(WAIT);
      assertThat(weightIn(accepted)).isEqualTo(2);
      DiscoveryResponse retried = rejecting.next(WAIT);
      assertThat(weightIn(retried)).isEqualTo(2);
      assertThat(retried.getVersionInfo()).isEqualTo(accepted.getVersionInfo());
      assertThat(xds.metrics().nacks()).isEqualTo(1);
    }
  }

  @Test
  void twoReplicasServeTheSameVersionsForTheSameRegistry() throws Exception {
    register("replicas", "10.2.0.1:50051", 1);
    register("replicas", "10.2.0.2:50051", 3);
    List<String> names = List.of("replicas");
    try (XdsServer first = xds()) {
      await().atMost(WAIT).until(() -> first.publisher().current() != null
          && first.publisher().current().services().containsKey("replicas"));
      register("replicas", "10.2.0.2:50051", 4); // first sees it as an event, second in its listing
      try (XdsServer second = xds();
          AdsProbe one = new AdsProbe(first.port(), "one");
          AdsProbe two = new AdsProbe(second.port(), "two")) {
        await().atMost(WAIT).until(() -> second.revision() >= first.revision() && first.revision() > 0);
        for (String type : List.of(AdsProbe.EDS, AdsProbe.LDS, AdsProbe.CDS)) {
          one.subscribe(type, names);
          two.subscribe(type, names);
          DiscoveryResponse a = untilWeight(one, type, 4);
          DiscoveryResponse b = untilWeight(two, type, 4);
          assertThat(b.getVersionInfo()).as(type).isEqualTo(a.getVersionInfo());
          assertThat(b.getResourcesList()).as(type).isEqualTo(a.getResourcesList());
        }
      }
    }
  }

  /** The next response of {@code type}; for EDS, the first whose second endpoint has {@code weight}. */
  private static DiscoveryResponse untilWeight(AdsProbe probe, String type, int weight) throws Exception {
    while (true) {
      DiscoveryResponse r = probe.next(WAIT);
      if (!r.getTypeUrl().equals(type)) {
        continue;
      }
      if (!type.equals(AdsProbe.EDS)
          || r.getResources(0).unpack(ClusterLoadAssignment.class).getEndpoints(1).getLoadBalancingWeight().getValue() == weight) {
        return r;
      }
    }
  }

  @Test
  void aChangeToOneServiceIsSentOnlyToItsClients() throws Exception {
    register("quiet", "10.3.0.1:50051", 1);
    register("busy", "10.3.0.2:50051", 1);
    try (XdsServer xds = xds();
        AdsProbe quiet = new AdsProbe(xds.port(), "quiet-client");
        AdsProbe busy = new AdsProbe(xds.port(), "busy-client")) {
      quiet.subscribe(AdsProbe.EDS, List.of("quiet"));
      busy.subscribe(AdsProbe.EDS, List.of("busy"));
      quiet.ack(quiet.next(WAIT), List.of("quiet"));
      busy.ack(busy.next(WAIT), List.of("busy"));

      register("busy", "10.3.0.2:50051", 7);

      assertThat(weightIn(busy.next(WAIT))).isEqualTo(7);
      assertThat(quiet.poll(Duration.ofSeconds(1))).as("a push to the quiet service's client").isNull();
    }
  }

  @Test
  void aRequestNamingAServedAndAnUnservedServiceIsAnsweredOnceBothAreServed() throws Exception {
    register("half-a", "10.6.0.1:50051", 1);
    try (XdsServer xds = xds(); AdsProbe probe = new AdsProbe(xds.port(), "half")) {
      await().atMost(WAIT).until(() -> xds.publisher().current() != null
          && xds.publisher().current().services().containsKey("half-a"));
      probe.subscribe(AdsProbe.EDS, List.of("half-a", "half-b"));
      register("half-b", "10.6.0.2:50051", 1);

      assertThat(probe.next(WAIT).getResourcesCount()).isEqualTo(2);
    }
  }

  @Test
  void deltaClientsReceiveOnlyTheResourceThatChanged() throws Exception {
    register("delta-a", "10.7.0.1:50051", 1);
    register("delta-b", "10.7.0.2:50051", 1);
    try (XdsServer xds = xds()) {
      await().atMost(WAIT).until(() -> xds.publisher().current() != null
          && xds.publisher().current().services().keySet().containsAll(List.of("delta-a", "delta-b")));
      ManagedChannel channel = ManagedChannelBuilder.forAddress("127.0.0.1", xds.port()).usePlaintext().build();
      try {
        BlockingQueue<DeltaDiscoveryResponse> responses = new LinkedBlockingQueue<>();
        StreamObserver<DeltaDiscoveryRequest> requests =
            AggregatedDiscoveryServiceGrpc.newStub(channel).deltaAggregatedResources(new StreamObserver<>() {
              @Override
              public void onNext(DeltaDiscoveryResponse r) {
                responses.add(r);
              }

              @Override
              public void onError(Throwable t) {}

              @Override
              public void onCompleted() {}
            });
        requests.onNext(DeltaDiscoveryRequest.newBuilder()
            .setNode(Node.newBuilder().setId("delta-client"))
            .setTypeUrl(AdsProbe.EDS)
            .addAllResourceNamesSubscribe(List.of("delta-a", "delta-b"))
            .build());
        DeltaDiscoveryResponse first = responses.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(first).isNotNull();
        assertThat(first.getResourcesList()).extracting(r -> r.getName()).containsExactlyInAnyOrder("delta-a", "delta-b");
        requests.onNext(DeltaDiscoveryRequest.newBuilder().setTypeUrl(AdsProbe.EDS).setResponseNonce(first.getNonce()).build());

        register("delta-b", "10.7.0.2:50051", 6);

        DeltaDiscoveryResponse next = responses.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(next).isNotNull();
        assertThat(next.getResourcesList()).extracting(r -> r.getName()).containsExactly("delta-b");
        assertThat(next.getResources(0).getResource().unpack(ClusterLoadAssignment.class)
            .getEndpoints(0).getLoadBalancingWeight().getValue()).isEqualTo(6);
        requests.onCompleted();
      } finally {
        channel.shutdownNow();
      }
    }
  }

  @Test
  void aServiceRegisteredAfterStartIsServed() throws Exception {
    try (XdsServer xds = xds(); AdsProbe probe = new AdsProbe(xds.port(), "late")) {
      probe.subscribe(AdsProbe.LDS, List.of("late"));
      register("late", "10.4.0.1:50051", 1);

      DiscoveryResponse r = probe.next(WAIT);
      assertThat(r.getResourcesCount()).isEqualTo(1);
    }
  }
}
