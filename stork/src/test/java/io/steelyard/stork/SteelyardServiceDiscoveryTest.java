package io.steelyard.stork;

import static io.steelyard.stork.StorkFixture.delete;
import static io.steelyard.stork.StorkFixture.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.smallrye.stork.api.ServiceInstance;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Service discovery {@code steelyard} through Stork's programmatic API, against a real etcd. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SteelyardServiceDiscoveryTest {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private static Client client;
  private final StorkFixture fixture = new StorkFixture();

  @BeforeAll
  static void connect() {
    client = EtcdConnection.of(etcd.endpoints()).connect();
  }

  @AfterAll
  static void disconnect() {
    client.close();
  }

  @AfterEach
  void closeStork() throws Exception {
    fixture.close();
  }

  private Map<String, String> discovery(String... more) {
    Map<String, String> p = new java.util.HashMap<>(Map.of("endpoints", etcd.endpoints()));
    for (int i = 0; i < more.length; i += 2) {
      p.put(more[i], more[i + 1]);
    }
    return p;
  }

  @Test
  void instancesCarryWeightZoneRegionAndMetadataAsLabelsAndMetadata() throws Exception {
    put(client, "/services/listed/10.0.0.1:8080", "10.0.0.1:8080|5");
    put(client, "/services/listed/10.0.0.2:8080",
        "{\"Op\":0,\"Addr\":\"10.0.0.2:8080\",\"Metadata\":{\"weight\":3,\"zone\":\"a\",\"region\":\"eu\",\"version\":\"1.4\"}}");
    fixture.service("listed", null, Map.of(), discovery());

    List<ServiceInstance> instances = fixture.instances("listed");

    assertThat(instances).extracting(ServiceInstance::getHost).containsExactly("10.0.0.1", "10.0.0.2");
    assertThat(instances).extracting(ServiceInstance::getPort).containsExactly(8080, 8080);
    assertThat(instances.get(0).getLabels()).isEqualTo(Map.of("weight", "5"));
    assertThat(instances.get(1).getLabels())
        .isEqualTo(Map.of("weight", "3", "zone", "a", "region", "eu", "version", "1.4"));
    assertThat(new java.util.HashMap<Object, Object>(instances.get(1).getMetadata().getMetadata()))
        .containsEntry(SteelyardMetadataKey.WEIGHT, 3)
        .containsEntry(SteelyardMetadataKey.ZONE, "a")
        .containsEntry(SteelyardMetadataKey.REGION, "eu");
    assertThat(instances).extracting(ServiceInstance::isSecure).containsOnly(false);
  }

  @Test
  void followsEveryChangeLiveWithoutARefreshPeriod() throws Exception {
    put(client, "/services/live/10.0.0.1:8080", "10.0.0.1:8080|1");
    fixture.service("live", null, Map.of(), discovery());
    assertThat(fixture.instances("live")).hasSize(1);
    long firstId = fixture.instances("live").get(0).getId();

    put(client, "/services/live/10.0.0.2:8080", "10.0.0.2:8080|1");
    await().atMost(Duration.ofSeconds(5)).until(() -> fixture.instances("live").size() == 2);

    put(client, "/services/live/10.0.0.1:8080", "10.0.0.1:8080|7");
    await().atMost(Duration.ofSeconds(5))
        .until(() -> fixture.instances("live").get(0).getLabels().get("weight").equals("7"));
    assertThat(fixture.instances("live").get(0).getId())
        .as("an address keeps its Stork id while it stays registered").isEqualTo(firstId);

    delete(client, "/services/live/10.0.0.1:8080");
    await().atMost(Duration.ofSeconds(5))
        .untilAsserted(() -> assertThat(fixture.instances("live")).extracting(ServiceInstance::getHost)
            .containsExactly("10.0.0.2"));
  }

  @Test
  void aDrainedInstanceStaysInTheViewWithWeightZero() throws Exception {
    put(client, "/services/drained/10.0.0.1:8080", "10.0.0.1:8080|0");
    put(client, "/services/drained/10.0.0.2:8080", "10.0.0.2:8080|2");
    fixture.service("drained", null, Map.of(), discovery());

    assertThat(fixture.instances("drained")).extracting(i -> i.getLabels().get("weight"))
        .containsExactly("0", "2");
    assertThat(fixture.discovery("drained").view().weight(0)).isZero();
  }

  @Test
  void malformedValuesAreSkippedAndCounted() throws Exception {
    put(client, "/services/malformed/10.0.0.1:8080", "10.0.0.1:8080|heavy");
    put(client, "/services/malformed/10.0.0.2:8080", "10.0.0.2:8080|2");
    fixture.service("malformed", null, Map.of(), discovery());

    assertThat(fixture.instances("malformed")).extracting(ServiceInstance::getHost).containsExactly("10.0.0.2");
    assertThat(fixture.discovery("malformed").malformedCount()).isEqualTo(1);
  }

  @Test
  void theCallersZoneComesFromTheZoneAttribute() {
    fixture.service("zoned", null, Map.of(), discovery("zone", "eu-west-1a"));

    assertThat(fixture.discovery("zoned").callerZone()).isEqualTo("eu-west-1a");
  }

  @Test
  void anotherPrefixReadsAnotherRegistry() throws Exception {
    put(client, "/prod/services/prefixed/10.0.0.9:8080", "10.0.0.9:8080|1");
    fixture.service("prefixed", null, Map.of(), discovery("prefix", "/prod/services"));

    assertThat(fixture.instances("prefixed")).extracting(ServiceInstance::getHost).containsExactly("10.0.0.9");
  }

  @Test
  void aBadAttributeFailsStorksInitialisationNamingServiceAttributeAndExpectation() {
    String where = "Stork service 'bad', service-discovery 'steelyard': ";
    Map<Map<String, String>, String> cases = Map.of(
        Map.of("endpoints", "ftp://127.0.0.1:2379"),
        "endpoints: 'ftp://127.0.0.1:2379' (expected: http(s)://host:port)",
        Map.of("endpoints", etcd.endpoints(), "zone", "eu west"),
        "zone: 'eu west' (expected: 1..128 characters of A-Z a-z 0-9 . _ -, e.g. eu-west-1a)",
        Map.of("endpoints", etcd.endpoints(), "refresh-period", "5M"),
        "refresh-period: not an attribute of this provider",
        Map.of("endpoints", etcd.endpoints(), "cert", "pom.xml", "key", "pom.xml"),
        "cert: set without cacert",
        Map.of("endpoints", etcd.endpoints(), "cacert", "/no/such/ca.pem"),
        "cacert: '/no/such/ca.pem' (expected: a readable PEM file)",
        Map.of("endpoints", etcd.endpoints(), "prefix", "/a b"),
        "prefix: ",
        Map.of("endpoints", etcd.endpoints(), "secure", "yes"),
        "secure: 'yes' (expected: true or false)");
    cases.forEach((params, expected) -> {
      try (StorkFixture f = new StorkFixture()) {
        f.service("bad", null, Map.of(), params);
        assertThatThrownBy(f::stork)
            .as("%s", params)
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageStartingWith(where + expected)
            .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
  }

  @Test
  void theFirstCallNamesAnUnreachableEtcdWithinThreeSeconds() {
    fixture.service("nowhere", null, Map.of(), Map.of("endpoints", "http://127.0.0.1:1"));

    long start = System.nanoTime();
    assertThatThrownBy(() -> fixture.service("nowhere").getInstances().await().atMost(Duration.ofSeconds(10)))
        .hasMessageContaining("steelyard service nowhere: no list from etcd within 3 s")
        .hasMessageContaining("etcd unreachable at http://127.0.0.1:1");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
    assertThat(fixture.discovery("nowhere").problem()).hasValueSatisfying(
        p -> assertThat(p).startsWith("etcd unreachable at http://127.0.0.1:1: "));
  }
}
