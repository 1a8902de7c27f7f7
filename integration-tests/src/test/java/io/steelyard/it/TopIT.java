package io.steelyard.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.steelyard.examples.GreeterClient;
import io.steelyard.examples.GreeterServer;
import io.steelyard.testkit.EtcdCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code steelyard top SERVICE --once --output json} reads each instance's advertised metrics:
 * calls per second follow the weights, a drained instance shows as drained and gets no calls,
 * and an instance without a metrics URL still shows its registry columns; without {@code --once}
 * the view is redrawn every interval until stopped.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TopIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  @Test
  void topShowsRatesPerInstanceFromTheirAdvertisedMetricsOnceAndLive() throws Exception {
    String service = "topped";
    try (Greeters greeters = new Greeters(etcd.endpoints(), service)) {
      GreeterServer a = greeters.add(greeters.builder().weight(1).metricsPort(0).build().start());
      GreeterServer b = greeters.add(greeters.builder().weight(4).metricsPort(0).build().start());
      GreeterServer c = greeters.add(greeters.builder().weight(0).metricsPort(0).build().start());
      GreeterServer plain = greeters.start(1); // no metrics URL
      try (GreeterClient client = GreeterClient.builder(etcd.endpoints(), service).build();
          Load load = Load.start(client, 2)) {
        await().atMost(Duration.ofSeconds(30)).until(() ->
            load.callsTo(a.address()) >= 20 && load.callsTo(b.address()) >= 20);

        Cli.Result r = Cli.run(etcd.endpoints(), "top", service, "--once", "--output", "json",
            "--interval", "2s");
        assertThat(r.exitCode()).as("stderr: %s", r.stderr()).isZero();
        JsonObject view = JsonParser.parseString(r.stdout()).getAsJsonObject();
        Map<String, JsonObject> rows = new HashMap<>();
        for (JsonElement e : view.getAsJsonArray("instances")) {
          rows.put(e.getAsJsonObject().get("address").getAsString(), e.getAsJsonObject());
        }
        assertThat(rows).containsOnlyKeys(a.address(), b.address(), c.address(), plain.address());
        double rateA = rows.get(a.address()).get("callsPerSecond").getAsDouble();
        double rateB = rows.get(b.address()).get("callsPerSecond").getAsDouble();
        assertThat(rateA).isPositive();
        assertThat(rateB).as("weight 4 vs 1").isGreaterThan(rateA);
        assertThat(rows.get(b.address()).get("p99Seconds").getAsDouble()).isPositive().isLessThan(5);
        assertThat(rows.get(b.address()).get("errorRate").getAsDouble()).isZero();
        assertThat(rows.get(c.address()).get("state").getAsString()).isEqualTo("drained");
        assertThat(rows.get(c.address()).get("callsPerSecond").getAsDouble()).isZero();
        assertThat(rows.get(plain.address()).get("metricsUrl").isJsonNull()).isTrue();
        assertThat(rows.get(plain.address()).get("weight").getAsInt()).isEqualTo(1);
        assertThat(rows.get(plain.address()).get("note").getAsString()).isEqualTo("no metrics URL");

        // Live: the table is redrawn every --interval until the operator stops it (SIGTERM here).
        Path live = Files.createTempFile("steelyard-top", ".out");
        Process top = Cli.startCapturing(etcd.endpoints(), live, "top", service, "--interval", "500ms");
        try {
          await().atMost(Duration.ofSeconds(45)).untilAsserted(() -> {
            String[] screens = Files.readString(live).split("\033\\[H\033\\[2J", -1);
            assertThat(screens).as("screens drawn").hasSizeGreaterThanOrEqualTo(3);
            // The one before the last is complete: the last may be mid-write.
            assertThat(screens[screens.length - 2]).contains(b.address()).contains("registered");
          });
        } finally {
          top.destroy();
          assertThat(top.waitFor(10, TimeUnit.SECONDS)).as("top stops on SIGTERM").isTrue();
          Files.deleteIfExists(live);
        }
      }
    }
  }
}
