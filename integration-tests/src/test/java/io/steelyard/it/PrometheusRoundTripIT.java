package io.steelyard.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.steelyard.balancer.BalancerMetrics;
import io.steelyard.discovery.DiscoveryMetrics;
import io.steelyard.examples.GreeterClient;
import io.steelyard.examples.GreeterServer;
import io.steelyard.registry.MetricsEndpoint;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.FreePorts;
import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A real Prometheus (Debian's package; scripts/test installs it) scrapes two greeter servers and
 * a client, and the series come back through its HTTP query API with the values the parts
 * hold: registration, weights per backend, calls per backend and on each server.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class PrometheusRoundTripIT {

  private static final String SERVICE = "scraped";

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private final HttpClient http = HttpClient.newHttpClient();

  /** {@code PROMETHEUS_BINARY}, else {@code prometheus} on the PATH; null when there is none. */
  private static Path prometheusBinary() {
    String configured = System.getenv("PROMETHEUS_BINARY");
    if (configured != null && Files.isExecutable(Path.of(configured))) {
      return Path.of(configured);
    }
    for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
      Path p = Path.of(dir, "prometheus");
      if (Files.isExecutable(p)) {
        return p;
      }
    }
    return null;
  }

  @Test
  void prometheusScrapesTwoServersAndAClientAndAnswersQueriesWithTheirValues() throws Exception {
    Path binary = prometheusBinary();
    Assumptions.assumeTrue(binary != null,
        "SKIPPED: no prometheus binary (scripts/test installs Debian's 'prometheus' when root;"
            + " or set PROMETHEUS_BINARY)");
    Path dir = Files.createTempDirectory("steelyard-prometheus");
    Process prometheus = null;
    PrometheusMeterRegistry clientMeters = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try (Greeters greeters = new Greeters(etcd.endpoints(), SERVICE);
        MetricsEndpoint clientMetrics = MetricsEndpoint.start("127.0.0.1", 0, clientMeters::scrape);
        DiscoveryMetrics discovery = new DiscoveryMetrics()) {
      GreeterServer a = greeters.add(greeters.builder().weight(1).metricsPort(0).build().start());
      GreeterServer b = greeters.add(greeters.builder().weight(3).metricsPort(0).build().start());
      discovery.bindTo(clientMeters);
      try (GreeterClient client = GreeterClient.builder(etcd.endpoints(), SERVICE)
              .metrics(BalancerMetrics.of(clientMeters)).build();
          Load load = Load.start(client, 2)) {
        await().atMost(Duration.ofSeconds(30)).until(() ->
            load.callsTo(a.address()) >= 20 && load.callsTo(b.address()) >= 20);

        int port = FreePorts.one();
        Path config = dir.resolve("prometheus.yml");
        Files.writeString(config, String.join("\n",
            "global:",
            "  scrape_interval: 1s",
            "  evaluation_interval: 1s",
            "scrape_configs:",
            "  - job_name: steelyard",
            "    static_configs:",
            "      - targets: [" + target(a.metricsUrl()) + ", " + target(b.metricsUrl()) + ", "
                + target(clientMetrics.url()) + "]",
            ""));
        prometheus = new ProcessBuilder(binary.toString(),
                "--config.file=" + config,
                "--storage.tsdb.path=" + dir.resolve("data"),
                "--web.listen-address=127.0.0.1:" + port,
                "--log.level=warn")
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve("prometheus.log").toFile())
            .start();
        String api = "http://127.0.0.1:" + port + "/api/v1/query?query=";

        // Every target up, then each part's series with the values the parts hold. Until
        // Prometheus listens, a query is refused: that is waited out, not a failure.
        Process started = prometheus;
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(500))
            .ignoreExceptionsInstanceOf(IOException.class)
            .failFast("prometheus exited before answering", () -> !started.isAlive())
            .until(() -> query(api, "sum(up{job=\"steelyard\"})").getOrDefault("", 0.0) == 3);
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(500)).untilAsserted(() -> {
          assertThat(query(api, "steelyard_registration_registered{service=\"" + SERVICE + "\"}",
              "address")).isEqualTo(Map.of(a.address(), 1.0, b.address(), 1.0));
          assertThat(query(api, "steelyard_registration_weight{service=\"" + SERVICE + "\"}",
              "address")).isEqualTo(Map.of(a.address(), 1.0, b.address(), 3.0));
          assertThat(query(api, "steelyard_balancer_weight{service=\"" + SERVICE + "\"}",
              "backend")).isEqualTo(Map.of(a.address(), 1.0, b.address(), 3.0));
          assertThat(query(api, "steelyard_balancer_ready{service=\"" + SERVICE + "\"}",
              "reason")).isEqualTo(Map.of("ready", 2.0));
          assertThat(query(api, "steelyard_discovery_instances{service=\"" + SERVICE + "\"}"))
              .isEqualTo(Map.of("", 2.0));
        });
        // Counters are scraped a second apart: what Prometheus holds is at most what the parts
        // counted, and at least what they had counted before the last scrape began.
        double toA = load.callsTo(a.address());
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(500)).untilAsserted(() -> {
          Map<String, Double> byBackend = query(api,
              "sum by (backend) (steelyard_client_calls_total{service=\"" + SERVICE
                  + "\",status=\"OK\"})", "backend");
          assertThat(byBackend).containsOnlyKeys(a.address(), b.address());
          assertThat(byBackend.get(a.address())).isGreaterThanOrEqualTo(toA);
          Map<String, Double> served = query(api,
              "sum by (instance) (steelyard_server_calls_total{service=\"" + SERVICE
                  + "\",status=\"OK\"})", "instance");
          assertThat(served).hasSize(2).allSatisfy((k, v) -> assertThat(v).isPositive());
          assertThat(query(api, "histogram_quantile(0.99, sum by (le) (rate("
              + "steelyard_server_call_duration_seconds_bucket{service=\"" + SERVICE + "\"}[10s])))"))
              .hasEntrySatisfying("", p99 -> assertThat(p99).isPositive().isLessThan(5));
        });
      }
    } finally {
      clientMeters.close();
      if (prometheus != null) {
        prometheus.destroy();
        if (!prometheus.waitFor(10, TimeUnit.SECONDS)) {
          prometheus.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        }
      }
      try (Stream<Path> files = Files.walk(dir)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  private static String target(String metricsUrl) {
    URI u = URI.create(metricsUrl);
    return "'" + u.getHost() + ":" + u.getPort() + "'";
  }

  /** An instant query's vector: the value per value of {@code label} ({@code ""} for one series). */
  private Map<String, Double> query(String api, String promql, String... label)
      throws IOException, InterruptedException {
    HttpResponse<String> r = http.send(
        HttpRequest.newBuilder(URI.create(api + URLEncoder.encode(promql, StandardCharsets.UTF_8)))
            .timeout(Duration.ofSeconds(5)).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as("%s: %s", promql, r.body()).isEqualTo(200);
    JsonObject body = JsonParser.parseString(r.body()).getAsJsonObject();
    JsonArray result = body.getAsJsonObject("data").getAsJsonArray("result");
    Map<String, Double> out = new HashMap<>();
    for (JsonElement e : result) {
      JsonObject series = e.getAsJsonObject();
      String key = label.length == 0 ? "" : series.getAsJsonObject("metric").get(label[0]).getAsString();
      out.merge(key, Double.parseDouble(series.getAsJsonArray("value").get(1).getAsString()), Double::sum);
    }
    return out;
  }
}
