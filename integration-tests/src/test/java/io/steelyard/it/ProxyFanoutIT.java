package io.steelyard.it;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.steelyard.discovery.ServiceWatcher;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.EtcdGrpcProxy;
import io.steelyard.testkit.EtcdMember;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The lean version of the clients-per-proxy benchmark ({@code scripts/bench-proxy},
 * docs/benchmarks.md): independent clients, each a {@link ServiceWatcher} on its own {@link
 * EtcdConnection} (so its own etcd client, as separate processes would have), watching one
 * service. Directly, etcd holds one watch stream per client; through one {@code etcd grpc-proxy}
 * it holds the proxy's one watch whatever the number of clients, and every client still gets
 * every weight change. The sizing guide's "when to put proxies in front" rests on both.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ProxyFanoutIT {

  private static final int CLIENTS = 20;
  private static final String STREAMS = "etcd_debugging_mvcc_watch_stream_total";
  private static final String WATCHERS = "etcd_debugging_mvcc_watcher_total";

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  @Test
  void independentClientsDirectlyAreOneWatchStreamEachOnEtcd() throws Exception {
    EtcdMember member = etcd.members().get(0);
    double streams0 = member.metric(STREAMS);
    List<ServiceWatcher> clients = openClients(member.clientEndpoint().toString(), "fanout-direct");
    try {
      await().atMost(Duration.ofSeconds(30)).until(() -> member.metric(STREAMS) >= streams0 + CLIENTS);
      changesReachEveryClient(clients, "fanout-direct");
    } finally {
      clients.forEach(ServiceWatcher::close);
    }
    // Each test leaves etcd's count as it found it, so the other's baseline holds.
    await().atMost(Duration.ofSeconds(30)).until(() -> member.metric(STREAMS) <= streams0);
  }

  @Test
  void independentClientsThroughOneProxyAreOneWatchOnEtcdAndAllConverge() throws Exception {
    EtcdMember member = etcd.members().get(0);
    double before = member.metric(STREAMS);
    try (EtcdGrpcProxy proxy = EtcdGrpcProxy.start(etcd)) {
      double streams0 = member.metric(STREAMS);
      double watchers0 = member.metric(WATCHERS);
      List<ServiceWatcher> clients = openClients(proxy.endpoint(), "fanout-proxy");
      try {
        changesReachEveryClient(clients, "fanout-proxy");
        // The proxy's coalesced watch of the service (etcd counts it on a stream the proxy may
        // already hold): 20 clients directly are 20 of each (the test above).
        assertThat(member.metric(STREAMS) - streams0).as("watch streams etcd gained").isLessThanOrEqualTo(1);
        assertThat(member.metric(WATCHERS) - watchers0).as("watchers etcd gained").isLessThanOrEqualTo(1);
      } finally {
        clients.forEach(ServiceWatcher::close);
      }
    }
    await().atMost(Duration.ofSeconds(30)).until(() -> member.metric(STREAMS) <= before);
  }

  /** {@link #CLIENTS} watchers of {@code service}, each on its own connection, with the full list. */
  private static List<ServiceWatcher> openClients(String endpoint, String service) throws Exception {
    try (Client writer = EtcdConnection.of(etcd.endpoints()).connect()) {
      for (int i = 1; i <= 5; i++) {
        put(writer, service, "10.0.0." + i + ":50051", 1);
      }
    }
    List<ServiceWatcher> clients = new ArrayList<>();
    for (int i = 0; i < CLIENTS; i++) {
      // The process shares a client per connection: a different connect timeout makes each one
      // its own connection, client and watch.
      EtcdConnection own = EtcdConnection.builder().endpoints(endpoint)
          .connectTimeout(Duration.ofMillis(EtcdConnection.DEFAULT_CONNECT_TIMEOUT_MILLIS + i)).build();
      clients.add(ServiceWatcher.open(own, KeyLayout.defaults(), service, s -> {}));
    }
    await().atMost(Duration.ofSeconds(30))
        .until(() -> clients.stream().allMatch(c -> c.current() != null && c.current().instances().size() == 5));
    return clients;
  }

  private static void changesReachEveryClient(List<ServiceWatcher> clients, String service) throws Exception {
    try (Client writer = EtcdConnection.of(etcd.endpoints()).connect()) {
      for (int weight = 2; weight <= 4; weight++) {
        put(writer, service, "10.0.0.1:50051", weight);
        int expected = weight;
        await().atMost(Duration.ofSeconds(30))
            .until(() -> clients.stream().allMatch(c -> weightOf(c, "10.0.0.1:50051") == expected));
      }
    }
  }

  private static int weightOf(ServiceWatcher client, String address) {
    return client.current().instances().stream()
        .filter(i -> i.address().equals(address)).mapToInt(ServiceInstance::weight).findFirst().orElse(-1);
  }

  private static void put(Client writer, String service, String address, int weight) throws Exception {
    writer.getKVClient()
        .put(bytes("/services/" + service + "/" + address), bytes(address + "|" + weight))
        .get(10, TimeUnit.SECONDS);
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, UTF_8);
  }
}
