package io.steelyard.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.binder.MeterBinder;
import io.steelyard.agent.AgentMetrics;
import io.steelyard.agent.ServiceRegistration;
import io.steelyard.discovery.DiscoveryMetrics;
import io.steelyard.discovery.ServiceWatcher;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The meters of an application that binds steelyard's module binders itself next to the
 * starter's, in Boot's Prometheus registry: every meter appears once, with the tags {@code
 * docs/metrics.md} gives it. The application declares its own {@link DiscoveryMetrics} bean (as
 * docs/metrics.md shows) and binds {@link AgentMetrics} for a second registration of its own
 * (a sidecar), the case where a starter meter with other tag keys would make Prometheus drop one.
 */
@SpringBootTest(
    classes = {TestApp.class, MetersIT.AppBoundBinders.class},
    webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
      "spring.application.name=who",
      "spring.grpc.server.port=0",
      "spring.grpc.server.host=127.0.0.1",
      "steelyard.etcd.prefix=/it-meters",
      "steelyard.registration.weight=5",
      "steelyard.registration.drain-delay=0s",
      "management.endpoints.web.exposure.include=prometheus"
    })
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class MetersIT {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  private static final KeyLayout LAYOUT = KeyLayout.of("/it-meters");

  @DynamicPropertySource
  static void etcdEndpoints(DynamicPropertyRegistry registry) {
    registry.add("steelyard.etcd.endpoints", etcd::endpoints);
  }

  /** What the application binds itself: the module binders, as docs/metrics.md shows them. */
  @TestConfiguration(proxyBeanMethods = false)
  static class AppBoundBinders {
    @Bean
    DiscoveryMetrics appDiscoveryMetrics() {
      return new DiscoveryMetrics();
    }

    @Bean(destroyMethod = "close")
    ServiceRegistration sidecar() {
      ServiceRegistration r =
          ServiceRegistration.builder(EtcdConnection.of(etcd.endpoints()), "sidecar", "127.0.0.1:1")
              .keyLayout(LAYOUT)
              .weight(3)
              .build();
      r.start();
      return r;
    }

    @Bean
    MeterBinder sidecarMeters(ServiceRegistration sidecar) {
      return registry -> AgentMetrics.of(registry).bind(sidecar);
    }

    /** A watcher, so that the per-service discovery meters exist. */
    @Bean(destroyMethod = "close")
    ServiceWatcher whoWatcher() {
      return ServiceWatcher.open(EtcdConnection.of(etcd.endpoints()), LAYOUT, "who", s -> {});
    }
  }

  /** docs/metrics.md: each family this application has, with its label names. */
  private static final Map<String, Set<String>> DOCUMENTED = Map.ofEntries(
      Map.entry("steelyard_registration_registered", Set.of("service", "address")),
      Map.entry("steelyard_registration_weight", Set.of("service", "address")),
      Map.entry("steelyard_registration_recoveries_total", Set.of("service", "address", "cause")),
      Map.entry("steelyard_discovery_instances", Set.of("service")),
      Map.entry("steelyard_discovery_stale_seconds", Set.of("service")),
      Map.entry("steelyard_discovery_malformed_total", Set.of("service")),
      Map.entry("steelyard_discovery_relists_total", Set.of("service", "cause")),
      Map.entry("steelyard_discovery_watches", Set.of()),
      Map.entry("steelyard_discovery_etcd_clients", Set.of()),
      Map.entry("steelyard_discovery_etcd_watches", Set.of()));

  private static final Pattern SAMPLE =
      Pattern.compile("^(steelyard_[a-z_]+?)(?:\\{(.*)})? (\\S+)$");
  private static final Pattern LABEL = Pattern.compile("([a-z_]+)=\"((?:[^\"\\\\]|\\\\.)*)\"");

  @Autowired GrpcServerRegistration registration;
  @Autowired ServiceRegistration sidecar;
  @Autowired Environment environment;
  @Autowired List<DiscoveryMetrics> discoveryBinders;

  private int httpPort;

  @BeforeEach
  void registered() throws Exception {
    registration.registered().get(20, TimeUnit.SECONDS);
    sidecar.registered().get(20, TimeUnit.SECONDS);
    httpPort = environment.getRequiredProperty("local.server.port", Integer.class);
  }

  @Test
  void theApplicationsDiscoveryBinderReplacesTheStartersOne() {
    assertThat(discoveryBinders).hasSize(1);
  }

  @Test
  void eachMeterIsScrapedOnceWithTheDocumentedTags() {
    String who = registration.address().orElseThrow();
    await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
      List<Sample> samples = scrape();
      Map<String, Set<String>> labelNames = new HashMap<>();
      Set<String> seen = new HashSet<>();
      for (Sample s : samples) {
        assertThat(seen.add(s.name + s.labels)).as("scraped once: %s%s", s.name, s.labels).isTrue();
        Set<String> names = labelNames.computeIfAbsent(s.name, n -> s.labels.keySet());
        assertThat(s.labels.keySet()).as("one set of tag keys for %s", s.name).isEqualTo(names);
      }
      for (Map.Entry<String, Set<String>> d : DOCUMENTED.entrySet()) {
        assertThat(labelNames).as("scraped: %s", d.getKey()).containsKey(d.getKey());
        assertThat(labelNames.get(d.getKey())).as("tags of %s", d.getKey()).isEqualTo(d.getValue());
      }
      assertThat(value(samples, "steelyard_registration_weight", "service", "who", "address", who))
          .isEqualTo(5.0);
      assertThat(value(samples, "steelyard_registration_registered", "service", "who", "address", who))
          .isEqualTo(1.0);
      assertThat(value(samples, "steelyard_registration_weight",
          "service", "sidecar", "address", "127.0.0.1:1")).isEqualTo(3.0);
      assertThat(value(samples, "steelyard_registration_registered",
          "service", "sidecar", "address", "127.0.0.1:1")).isEqualTo(1.0);
      assertThat(value(samples, "steelyard_discovery_instances", "service", "who")).isEqualTo(1.0);
    });
  }

  @Test
  void theStarterDefinesNoMeterOfItsOwnBesidesTheOpenWatchStreams() {
    Set<String> families = new TreeSet<>();
    for (Sample s : scrape()) {
      families.add(s.name.replaceAll("_(bucket|count|sum|max)$", ""));
    }
    assertThat(families).doesNotContain(
        "steelyard_registration_registrations_total",
        "steelyard_discovery_stale_watches",
        "steelyard_discovery_staleness_seconds",
        "steelyard_discovery_malformed_values_total");
  }

  private record Sample(String name, Map<String, String> labels, double value) {}

  private List<Sample> scrape() {
    Http.Response r = Http.get(httpPort, "/actuator/prometheus");
    assertThat(r.status()).isEqualTo(200);
    List<Sample> samples = new ArrayList<>();
    for (String line : r.body().split("\n")) {
      Matcher m = SAMPLE.matcher(line);
      if (!m.matches()) {
        continue;
      }
      Map<String, String> labels = new HashMap<>();
      if (m.group(2) != null) {
        Matcher l = LABEL.matcher(m.group(2));
        while (l.find()) {
          labels.put(l.group(1), l.group(2));
        }
      }
      samples.add(new Sample(m.group(1), labels, Double.parseDouble(m.group(3))));
    }
    return samples;
  }

  private static double value(List<Sample> samples, String name, String... labels) {
    Map<String, String> want = new HashMap<>();
    for (int i = 0; i < labels.length; i += 2) {
      want.put(labels[i], labels[i + 1]);
    }
    return samples.stream()
        .filter(s -> s.name.equals(name) && s.labels.entrySet().containsAll(want.entrySet()))
        .mapToDouble(Sample::value)
        .reduce((a, b) -> {
          throw new AssertionError("two series of " + name + want);
        })
        .orElseThrow(() -> new AssertionError("no series " + name + want));
  }
}
