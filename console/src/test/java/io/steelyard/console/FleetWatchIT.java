package io.steelyard.console;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.DeleteOption;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.testkit.EtcdCluster;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The services page's data against a real etcd: complete at the first answer, then following
 * every change through discovery's watchers, each on its own prefix.
 */
@Timeout(60)
class FleetWatchIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private final ExecutorService tick = Executors.newSingleThreadExecutor();
  private Client client;
  private Fleet fleet;
  private KeyLayout layout;
  private FleetWatch watch;

  @BeforeEach
  void connect() {
    client = Client.builder().endpoints(etcd.endpoints()).build();
    fleet = new Fleet(client);
    layout = KeyLayout.defaults();
  }

  @AfterEach
  void close() throws InterruptedException {
    if (watch != null) {
      watch.close();
    }
    tick.shutdown();
    tick.awaitTermination(5, TimeUnit.SECONDS);
    client.getKVClient().delete(bytes("/services/"),
        DeleteOption.builder().isPrefix(true).build()).join();
    client.close();
  }

  private FleetWatch start() {
    watch = new FleetWatch(EtcdConnection.of(etcd.endpoints()), layout, etcd.endpoints(),
        new Metrics(HttpClient.newHttpClient(), System::nanoTime), Clock.systemUTC(), tick);
    watch.start();
    return watch;
  }

  @Test
  void theFirstAnswerHoldsEveryServiceWithItsCounts() throws Exception {
    long lease = fleet.grant(300);
    fleet.register("greeter", "10.0.4.11:50051", 4, Map.of("metrics", "http://10.0.4.11:9464/metrics"), lease);
    fleet.register("greeter", "10.0.4.12:50051", 0, Map.of(), lease);
    fleet.register("payments", "10.0.7.21:7000", 3, Map.of(), lease);
    put("/services/payments/10.0.7.22:7000", "not a value");
    put("/services/.drained/greeter/10.0.4.12:50051", "4");

    FleetWatch w = start();

    assertThat(w.awaitFirstAnswer()).isTrue();
    assertThat(w.services()).containsExactly(
        new FleetWatch.Service("greeter", 2, 1, 4, 0, List.of("http://10.0.4.11:9464/metrics")),
        new FleetWatch.Service("payments", 1, 0, 3, 1, List.of()));
    assertThat(w.json(false).get("stale").getAsBoolean()).isFalse();
    assertThat(w.json(false).get("listedAt").isJsonNull()).isFalse();
  }

  @Test
  void anEmptyRegistryIsAnAnswerToo() throws Exception {
    FleetWatch w = start();

    assertThat(w.awaitFirstAnswer()).isTrue();
    assertThat(w.services()).isEmpty();
    assertThat(w.json(false).get("listedAt").isJsonNull()).as("listed, and empty").isFalse();
  }

  @Test
  void servicesComeChangeAndGoAsEtcdDoes() throws Exception {
    FleetWatch w = start();
    assertThat(w.awaitFirstAnswer()).isTrue();
    long lease = fleet.grant(300);

    fleet.register("orders", "10.0.8.1:9000", 2, Map.of(), lease);
    await().atMost(Duration.ofSeconds(10)).until(w::services,
        s -> s.equals(List.of(new FleetWatch.Service("orders", 1, 0, 2, 0, List.of()))));

    fleet.register("orders", "10.0.8.2:9000", 5, Map.of(), lease);
    fleet.register("orders", "10.0.8.1:9000", 0, Map.of(), lease);
    await().atMost(Duration.ofSeconds(10)).until(w::services,
        s -> s.equals(List.of(new FleetWatch.Service("orders", 2, 1, 5, 0, List.of()))));

    client.getKVClient().delete(bytes("/services/orders/"),
        DeleteOption.builder().isPrefix(true).build()).join();
    await().atMost(Duration.ofSeconds(10)).until(w::services, List::isEmpty);
  }

  private void put(String key, String value) {
    client.getKVClient().put(bytes(key), bytes(value)).join();
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
