package io.steelyard.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.steelyard.examples.GreeterClient;
import io.steelyard.examples.GreeterServer;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.FreePorts;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A rolling restart of every server, each shut down gracefully (NOT_SERVING, deregister, drain
 * delay, shutdown, grace) and started again on its address, under load: not one call fails, and
 * no retry policy is needed for that.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RollingRestartIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  @Test
  void rollingRestartUnderLoadFailsNoCall() throws Exception {
    String service = "rolling";
    try (Greeters greeters = new Greeters(etcd.endpoints(), service)) {
      // Each server restarts on its own port: ports outside the ephemeral range, so that no
      // outgoing connection takes one while it is released.
      List<GreeterServer> servers =
          List.of(
              greeters.start(1, FreePorts.one()),
              greeters.start(2, FreePorts.one()),
              greeters.start(5, FreePorts.one()));

      try (GreeterClient client =
              GreeterClient.builder(etcd.endpoints(), service).policy("weighted_random").retry(false).build();
          Load load = Load.start(client, 2)) {
        await().atMost(Duration.ofSeconds(30)).until(() -> load.succeeded() >= 2_000);

        for (GreeterServer old : servers) {
          String address = old.address();
          old.close(); // graceful, blocks through the drain delay and the grace period
          long before = load.callsTo(address);
          greeters.start(old.weight(), old.port());
          await().atMost(Duration.ofSeconds(30)).until(() -> load.callsTo(address) >= before + 200);
        }
        assertThat(load.failures()).as("failed calls").isEmpty();
        assertThat(load.callsByBackend()).hasSize(3);
      }
    }
  }
}
