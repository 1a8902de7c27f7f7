package io.steelyard.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

import io.steelyard.examples.GreeterClient;
import io.steelyard.examples.GreeterServer;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An operator changes a weight with the CLI while calls flow: the shares move to the new weights
 * and the client opens no new connection (a weight-only change swaps the picker, not the
 * subchannels).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class WeightChangeIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  @Test
  void cliWeightChangeMovesSharesWithoutNewConnections() throws Exception {
    String service = "weights";
    try (Greeters greeters = new Greeters(etcd.endpoints(), service)) {
      GreeterServer a = greeters.start(1);
      GreeterServer b = greeters.start(2);
      GreeterServer c = greeters.start(5);
      List<GreeterServer> all = List.of(a, b, c);

      try (GreeterClient client =
              GreeterClient.builder(etcd.endpoints(), service)
                  .policy("weighted_round_robin_static")
                  .build();
          Load load = Load.start(client, 2)) {
        await().atMost(Duration.ofSeconds(30))
            .until(() -> all.stream().allMatch(s -> load.callsTo(s.address()) >= 100));
        long connectionsBefore = connections(all);

        Cli.Result set = Cli.run(etcd.endpoints(), "weight", "set", service, a.address(), "10");
        assertThat(set.exitCode()).as("steelyard weight set: %s", set.stderr()).isZero();

        // Wait until the client has the new weights: a window of calls where a (1 -> 10, i.e.
        // 12.5% -> 58.8%) answers the most.
        AtomicReference<Map<String, Long>> last = new AtomicReference<>(load.callsByBackend());
        await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(200)).until(() -> {
          Map<String, Long> now = load.callsByBackend();
          Map<String, Long> window = minus(now, last.getAndSet(now));
          long total = window.values().stream().mapToLong(Long::longValue).sum();
          return total >= 100 && window.getOrDefault(a.address(), 0L) > total / 2;
        });

        Map<String, Long> start = load.callsByBackend();
        long startTotal = load.succeeded();
        await().atMost(Duration.ofSeconds(30)).until(() -> load.succeeded() >= startTotal + 5_000);
        Map<String, Long> next = minus(load.callsByBackend(), start);
        double total = next.values().stream().mapToLong(Long::longValue).sum();

        assertThat(next.getOrDefault(a.address(), 0L) / total).isCloseTo(10 / 17.0, within(0.03));
        assertThat(next.getOrDefault(b.address(), 0L) / total).isCloseTo(2 / 17.0, within(0.03));
        assertThat(next.getOrDefault(c.address(), 0L) / total).isCloseTo(5 / 17.0, within(0.03));
        assertThat(connections(all)).as("connections accepted by the servers").isEqualTo(connectionsBefore);
        assertThat(load.failures()).as("failed calls").isEmpty();
      }
    }
  }

  private static long connections(List<GreeterServer> servers) {
    return servers.stream().mapToLong(GreeterServer::connectionsAccepted).sum();
  }

  private static Map<String, Long> minus(Map<String, Long> now, Map<String, Long> before) {
    Map<String, Long> out = new HashMap<>();
    now.forEach((k, v) -> out.put(k, v - before.getOrDefault(k, 0L)));
    return out;
  }
}
