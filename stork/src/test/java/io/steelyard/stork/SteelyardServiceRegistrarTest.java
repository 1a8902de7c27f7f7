package io.steelyard.stork;

import static io.steelyard.stork.StorkFixture.get;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import io.smallrye.stork.api.ServiceRegistrar;
import io.smallrye.stork.api.ServiceRegistrar.RegistrarOptions;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import java.nio.charset.StandardCharsets;
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

/** Service registrar {@code steelyard} through Stork's programmatic API, against a real etcd. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SteelyardServiceRegistrarTest {

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

  @SuppressWarnings("unchecked")
  private ServiceRegistrar<SteelyardMetadataKey> registrar(String service, Map<String, String> params) {
    fixture.registrar(service, params);
    return fixture.service(service).getServiceRegistrar();
  }

  @Test
  void registersUnderALeaseWithWeightAndZoneAndRevokesOnDeregistration() throws Exception {
    ServiceRegistrar<SteelyardMetadataKey> registrar = registrar("reg",
        Map.of("endpoints", etcd.endpoints(), "weight", "2", "zone", "a", "ttl", "5"));

    registrar.registerServiceInstance(new RegistrarOptions("reg", "127.0.0.1", 8080, List.of(),
            Map.of("weight", "3", "version", "1.4")))
        .await().atMost(Duration.ofSeconds(10));

    KeyValue kv = get(client, "/services/reg/127.0.0.1:8080");
    assertThat(kv).isNotNull();
    assertThat(kv.getValue().toString(StandardCharsets.UTF_8)).isEqualTo(
        "{\"Op\":0,\"Addr\":\"127.0.0.1:8080\",\"Metadata\":{\"version\":\"1.4\",\"weight\":3,\"zone\":\"a\"}}");
    assertThat(kv.getLease()).isNotZero();
    long ttl = client.getLeaseClient().timeToLive(kv.getLease(), io.etcd.jetcd.options.LeaseOption.DEFAULT)
        .get(10, TimeUnit.SECONDS).getGrantedTTL();
    assertThat(ttl).isEqualTo(5);

    registrar.deregisterServiceInstance("reg").await().atMost(Duration.ofSeconds(10));
    assertThat(get(client, "/services/reg/127.0.0.1:8080")).isNull();
  }

  @Test
  void registersAgainWhenTheLeaseIsLost() throws Exception {
    ServiceRegistrar<SteelyardMetadataKey> registrar =
        registrar("lost", Map.of("endpoints", etcd.endpoints(), "ttl", "3"));
    registrar.registerServiceInstance("lost", "127.0.0.1", 8081).await().atMost(Duration.ofSeconds(10));
    long lease = get(client, "/services/lost/127.0.0.1:8081").getLease();

    client.getLeaseClient().revoke(lease).get(10, TimeUnit.SECONDS);

    await().atMost(Duration.ofSeconds(15)).untilAsserted(() -> {
      KeyValue kv = get(client, "/services/lost/127.0.0.1:8081");
      assertThat(kv).isNotNull();
      assertThat(kv.getLease()).isNotEqualTo(lease);
    });
    registrar.deregisterServiceInstance("lost").await().atMost(Duration.ofSeconds(10));
  }

  @Test
  void anInvalidServiceNameIsRefusedBeforeAnythingIsWritten() throws Exception {
    ServiceRegistrar<SteelyardMetadataKey> registrar = registrar("refused", Map.of("endpoints", etcd.endpoints()));

    for (String name : List.of("../escape", "a/b", "with space", "")) {
      assertThatThrownBy(() -> registrar.registerServiceInstance(name, "127.0.0.1", 8080))
          .as(name)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith("steelyard registrar of Stork service 'refused': service: ");
    }
    assertThatThrownBy(() -> registrar.registerServiceInstance("refused", "127.0.0.1", 0))
        .hasMessageContaining("address: '127.0.0.1:0'");
    assertThatThrownBy(() -> registrar.registerServiceInstance(new RegistrarOptions(
            "refused", "127.0.0.1", 8080, List.of(), Map.of("weight", "heavy"))))
        .hasMessageContaining("weight: 'heavy'");

    long keys = client.getKVClient().get(StorkFixture.bytes("/"),
        GetOption.builder().isPrefix(true).withCountOnly(true).build()).get(10, TimeUnit.SECONDS).getCount();
    assertThat(keys).as("nothing written anywhere").isZero();
  }

  @Test
  void aBadRegistrarAttributeFailsStorksInitialisation() {
    fixture.registrar("badreg", Map.of("endpoints", etcd.endpoints(), "weight", "-1"));

    assertThatThrownBy(fixture::stork)
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("Stork service 'badreg', service-registrar 'steelyard': weight: '-1' (expected: an integer 0..1000000)");
  }
}
