package io.steelyard.it;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import io.steelyard.agent.RegistrationState;
import io.steelyard.agent.ServiceRegistration;
import io.steelyard.agent.SharedLease;
import io.steelyard.discovery.ServiceWatcher;
import io.steelyard.discovery.Snapshot;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.registry.ValueCodec;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.EtcdGrpcProxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The lean version of the load-held benchmark ({@code scripts/bench-load}, docs/benchmarks.md):
 * 100 registrations on one shared lease over 5 services, 10 watchers, 20 weight changes per second
 * for 10 s on a 3-member cluster, directly and through etcd's gRPC proxy. Every watcher ends with
 * etcd's exact view (a fresh list from the cluster itself), every key is still there with the last
 * weight set. No timing assertions: the figures are the benchmark's.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class LoadHeldIT {

  private static final int REGISTRATIONS = 100;
  private static final int SERVICES = 5;
  private static final int WATCHERS = 10;
  private static final int CHANGES_PER_SECOND = 20;
  private static final int SECONDS = 10;

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().members(3).build();

  @ParameterizedTest
  @ValueSource(strings = {"direct", "proxy"})
  void watchersEndWithEtcdsExactViewAndNoRegistrationIsLost(String mode) throws Exception {
    String prefix = "held-" + mode;
    try (EtcdGrpcProxy proxy = mode.equals("proxy") ? EtcdGrpcProxy.start(etcd) : null;
        Client truth = EtcdConnection.of(etcd.endpoints()).connect()) {
      String endpoint = proxy != null ? proxy.endpoint() : etcd.endpoints();
      try (Client agentClient = EtcdConnection.of(endpoint).connect();
          SharedLease lease = SharedLease.builder(agentClient).ttl(Duration.ofSeconds(10)).build()) {
        List<ServiceRegistration> regs = new ArrayList<>();
        for (int i = 0; i < REGISTRATIONS; i++) {
          regs.add(ServiceRegistration.builder(lease, service(prefix, i), address(i)).weight(100).build());
        }
        List<ServiceWatcher> watchers = new ArrayList<>();
        try {
          CompletableFuture.allOf(regs.stream().map(ServiceRegistration::start).toArray(CompletableFuture<?>[]::new))
              .get(60, TimeUnit.SECONDS);
          EtcdConnection clients = EtcdConnection.of(endpoint);
          for (int w = 0; w < WATCHERS; w++) {
            watchers.add(ServiceWatcher.open(clients, KeyLayout.defaults(), service(prefix, w), s -> {}));
          }
          await().atMost(Duration.ofSeconds(30)).until(() -> watchers.stream().allMatch(w -> w.current() != null));

          int[] lastWeight = changeWeights(regs);

          assertThat(countKeys(truth, prefix)).as("registrations in etcd").isEqualTo(REGISTRATIONS);
          Map<String, Map<String, Integer>> inEtcd = freshList(truth, prefix);
          for (int i = 0; i < REGISTRATIONS; i++) {
            assertThat(inEtcd.get(service(prefix, i))).as("etcd's weight of instance %d", i)
                .containsEntry(address(i), lastWeight[i]);
          }
          await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
            for (int w = 0; w < WATCHERS; w++) {
              assertThat(view(watchers.get(w).current())).as("view of watcher %d", w)
                  .isEqualTo(inEtcd.get(service(prefix, w)));
            }
          });
          assertThat(regs).allMatch(r -> r.state() == RegistrationState.REGISTERED);
        } finally {
          watchers.forEach(ServiceWatcher::close);
          regs.forEach(ServiceRegistration::close);
        }
      }
      assertThat(countKeys(truth, prefix)).as("keys left after every close").isZero();
    }
  }

  /** The changes at a steady rate, instances in turn; every one must succeed. The last weights. */
  private static int[] changeWeights(List<ServiceRegistration> regs) throws Exception {
    int total = CHANGES_PER_SECOND * SECONDS;
    int[] last = new int[REGISTRATIONS];
    Arrays.fill(last, 100);
    AtomicInteger sent = new AtomicInteger();
    ConcurrentLinkedQueue<CompletableFuture<Void>> futures = new ConcurrentLinkedQueue<>();
    ScheduledExecutorService ticker = Executors.newSingleThreadScheduledExecutor();
    try {
      ticker.scheduleAtFixedRate(() -> {
        int k = sent.getAndIncrement();
        if (k < total) {
          int i = k * 7 % REGISTRATIONS;
          last[i]++;
          futures.add(regs.get(i).setWeight(last[i]));
        }
      }, 0, 1_000 / CHANGES_PER_SECOND, TimeUnit.MILLISECONDS);
      await().atMost(Duration.ofSeconds(SECONDS * 3L)).until(() -> sent.get() >= total);
    } finally {
      ticker.shutdown();
      assertThat(ticker.awaitTermination(5, TimeUnit.SECONDS)).isTrue();
    }
    assertThat(futures).hasSize(total);
    CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
    return last;
  }

  private static String service(String prefix, int i) {
    return prefix + "-s" + (i % SERVICES);
  }

  private static String address(int i) {
    return "10.3." + (i / 250) + "." + (i % 250 + 1) + ":50051";
  }

  private static Map<String, Integer> view(Snapshot s) {
    Map<String, Integer> m = new TreeMap<>();
    for (ServiceInstance i : s.instances()) {
      m.put(i.address(), i.weight());
    }
    return m;
  }

  private static Map<String, Map<String, Integer>> freshList(Client etcd, String prefix) throws Exception {
    String root = KeyLayout.defaults().prefix() + "/";
    List<KeyValue> kvs = etcd.getKVClient()
        .get(ByteSequence.from(root + prefix + "-", UTF_8), GetOption.builder().isPrefix(true).build())
        .get(30, TimeUnit.SECONDS).getKvs();
    Map<String, Map<String, Integer>> out = new TreeMap<>();
    for (KeyValue kv : kvs) {
      String key = kv.getKey().toString(UTF_8).substring(root.length());
      DecodedValue value = ValueCodec.decode(kv.getValue().getBytes());
      assertThat(value).as("value of %s", key).isInstanceOf(DecodedValue.Accepted.class);
      out.computeIfAbsent(key.substring(0, key.indexOf('/')), s -> new TreeMap<>())
          .put(((DecodedValue.Accepted) value).address(), ((DecodedValue.Accepted) value).weight());
    }
    return out;
  }

  private static long countKeys(Client etcd, String prefix) throws Exception {
    return etcd.getKVClient()
        .get(ByteSequence.from(KeyLayout.defaults().prefix() + "/" + prefix + "-", UTF_8),
            GetOption.builder().isPrefix(true).withCountOnly(true).build())
        .get(30, TimeUnit.SECONDS).getCount();
  }
}
