package io.steelyard.it;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import io.steelyard.discovery.ServiceWatcher;
import io.steelyard.discovery.Snapshot;
import io.steelyard.examples.GreeterClient;
import io.steelyard.examples.GreeterServer;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.registry.ValueCodec;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.EtcdGrpcProxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Everything through etcd's gRPC proxy ({@code etcd grpc-proxy start}) in front of a 3-member
 * cluster: the agent registers and keeps its lease alive, a channel resolves and calls, the CLI
 * lists and changes a weight; and watchers the proxy coalesces into one watch on etcd each end
 * with etcd's exact view while the service is written (the proxy may start a coalesced watch
 * from an older revision, and makes up its created notification: see PrefixWatcher).
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class GrpcProxyIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().members(3).build();

  private static EtcdGrpcProxy proxy;
  private static Client direct;

  @BeforeAll
  static void startProxy() {
    proxy = EtcdGrpcProxy.start(etcd);
    direct = EtcdConnection.of(etcd.endpoints()).connect();
  }

  @AfterAll
  static void stopProxy() {
    if (direct != null) {
      direct.close();
    }
    if (proxy != null) {
      proxy.close();
    }
  }

  @Test
  void agentChannelAndCliWorkThroughTheProxy() throws Exception {
    String service = "proxied";
    try (Greeters greeters = new Greeters(proxy.endpoint(), service)) {
      GreeterServer a = greeters.start(1);
      GreeterServer b = greeters.start(3);
      // Registered through the proxy: etcd itself holds both keys.
      await().atMost(Duration.ofSeconds(30)).until(() -> etcdView(service).size() == 2);

      try (GreeterClient client = GreeterClient.builder(proxy.endpoint(), service).build();
          Load load = Load.start(client, 2)) {
        await().atMost(Duration.ofSeconds(30))
            .until(() -> load.callsTo(a.address()) >= 50 && load.callsTo(b.address()) >= 50);

        Cli.Result list = Cli.run(proxy.endpoint(), "list", service);
        assertThat(list.exitCode()).as("steelyard list: %s", list.stderr()).isZero();
        assertThat(list.stdout()).contains(a.address()).contains(b.address());

        Cli.Result set = Cli.run(proxy.endpoint(), "weight", "set", service, a.address(), "9");
        assertThat(set.exitCode()).as("steelyard weight set: %s", set.stderr()).isZero();
        await().atMost(Duration.ofSeconds(15)).until(() -> etcdView(service).get(a.address()) == 9);

        // The channel follows: a window of calls where a (1 -> 9 of 12) answers the most.
        AtomicReference<Long> aBefore = new AtomicReference<>(load.callsTo(a.address()));
        AtomicReference<Long> allBefore = new AtomicReference<>(load.succeeded());
        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(300)).until(() -> {
          long toA = load.callsTo(a.address()) - aBefore.getAndSet(load.callsTo(a.address()));
          long all = load.succeeded() - allBefore.getAndSet(load.succeeded());
          return all >= 100 && toA > all / 2;
        });

        // Leases are kept alive through the proxy's coalesced keepalive: after more than two
        // TTLs (5 s) both keys are still there.
        long leaseA = lease(service, a.address());
        await().pollDelay(Duration.ofSeconds(11)).atMost(Duration.ofSeconds(20))
            .until(() -> etcdView(service).size() == 2);
        assertThat(lease(service, a.address())).as("the same lease, not a re-registration").isEqualTo(leaseA);
        assertThat(load.failures()).as("failed calls").isEmpty();
      }
    }
  }

  @Test
  void coalescedWatchersEndWithEtcdsExactViewWhileTheServiceIsWritten() throws Exception {
    String service = "coalesced";
    EtcdConnection throughProxy = EtcdConnection.of(proxy.endpoint());
    for (int i = 0; i < 20; i++) {
      put(service, i, 1);
    }
    List<ServiceWatcher> watchers = new ArrayList<>();
    try {
      // Each debounce is its own watcher on etcd's watch API, so the proxy sees five watches of
      // one prefix, opened at different revisions while writes go on: it coalesces them.
      watchers.add(ServiceWatcher.builder(throughProxy, service).debounce(Duration.ofMillis(1)).open(s -> {}));
      for (int round = 0; round < 200; round++) {
        put(service, round % 20, 2 + round);
        if (round % 50 == 25) {
          watchers.add(ServiceWatcher.builder(throughProxy, service)
              .debounce(Duration.ofMillis(2 + watchers.size())).open(s -> {}));
        }
      }
      watchers.add(ServiceWatcher.builder(throughProxy, service).debounce(Duration.ofMillis(20)).open(s -> {}));
      Map<String, Integer> truth = etcdView(service);
      assertThat(truth).hasSize(20);
      for (ServiceWatcher w : watchers) {
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(view(w.current())).isEqualTo(truth));
      }
    } finally {
      watchers.forEach(ServiceWatcher::close);
    }
  }

  private static void put(String service, int i, int weight) throws Exception {
    String address = "10.0.0." + (i + 1) + ":50051";
    direct.getKVClient()
        .put(bytes("/services/" + service + "/" + address), bytes(address + "|" + weight))
        .get(10, TimeUnit.SECONDS);
  }

  private static Map<String, Integer> view(Snapshot snapshot) {
    Map<String, Integer> out = new TreeMap<>();
    if (snapshot != null) {
      for (ServiceInstance i : snapshot.instances()) {
        out.put(i.address(), i.weight());
      }
    }
    return out;
  }

  /** Address to weight, as a member of the cluster holds them (linearizable read, no proxy). */
  private static Map<String, Integer> etcdView(String service) throws Exception {
    Map<String, Integer> out = new TreeMap<>();
    for (KeyValue kv : keys(service)) {
      DecodedValue.Accepted value = (DecodedValue.Accepted) ValueCodec.decode(kv.getValue().getBytes());
      out.put(value.address(), value.weight());
    }
    return out;
  }

  private static long lease(String service, String address) throws Exception {
    return keys(service).stream()
        .filter(kv -> kv.getKey().toString(UTF_8).endsWith("/" + address))
        .findFirst().orElseThrow().getLease();
  }

  private static List<KeyValue> keys(String service) throws Exception {
    return direct.getKVClient()
        .get(bytes("/services/" + service + "/"), GetOption.builder().isPrefix(true).build())
        .get(10, TimeUnit.SECONDS)
        .getKvs();
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, UTF_8);
  }
}
