package io.steelyard.spring.cloud;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.cloud.client.ServiceInstance;
import org.springframework.cloud.client.discovery.DiscoveryClient;
import org.springframework.cloud.client.discovery.ReactiveDiscoveryClient;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * {@code DiscoveryClient} and {@code ReactiveDiscoveryClient} against a real etcd: instances as
 * etcd holds them (host, port, metadata, weight), and every change followed within a second.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class DiscoveryIT {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  private static final String PREFIX = "/discovery-it";

  private static Client writer;
  private static ConfigurableApplicationContext client;

  @BeforeAll
  static void start() throws Exception {
    writer = EtcdConnection.of(etcd.endpoints()).connect();
    put("orders", "10.0.0.7:8080", "10.0.0.7:8080|5");
    put("orders", "10.0.0.8:8080",
        "{\"Op\":0,\"Addr\":\"10.0.0.8:8080\",\"Metadata\":{\"weight\":2,\"zone\":\"eu-1\"}}");
    put("payments", "10.0.0.9:9000", "10.0.0.9:9000");
    client = Apps.client(etcd.endpoints(), PREFIX).run();
  }

  @AfterAll
  static void stop() {
    if (client != null) {
      client.close();
    }
    if (writer != null) {
      writer.close();
    }
  }

  @Test
  void listsInstancesWithHostPortMetadataAndWeight() {
    List<ServiceInstance> orders = client.getBean(DiscoveryClient.class).getInstances("orders");

    assertThat(orders).extracting(ServiceInstance::getInstanceId)
        .containsExactly("10.0.0.7:8080", "10.0.0.8:8080");
    ServiceInstance second = orders.get(1);
    assertThat(second.getServiceId()).isEqualTo("orders");
    assertThat(second.getHost()).isEqualTo("10.0.0.8");
    assertThat(second.getPort()).isEqualTo(8080);
    assertThat(second.getUri()).hasToString("http://10.0.0.8:8080");
    assertThat(second.getMetadata()).containsExactlyInAnyOrderEntriesOf(Map.of("weight", "2", "zone", "eu-1"));
    assertThat(((SteelyardServiceInstance) orders.get(0)).getWeight()).isEqualTo(5);
    // A plain value (address only) weighs the default.
    assertThat(client.getBean(DiscoveryClient.class).getInstances("payments"))
        .singleElement().satisfies(i -> assertThat(i.getMetadata()).containsEntry("weight", "1"));
  }

  @Test
  void listsServicesThatHaveKeys() {
    assertThat(client.getBean(DiscoveryClient.class).getServices()).contains("orders", "payments");
  }

  @Test
  void unknownAndInvalidServicesHaveNoInstances() {
    DiscoveryClient discovery = client.getBean(DiscoveryClient.class);
    assertThat(discovery.getInstances("nobody")).isEmpty();
    assertThat(discovery.getInstances("../orders")).isEmpty();
  }

  @Test
  void followsAddedChangedAndRemovedInstancesWithinOneSecond() throws Exception {
    DiscoveryClient discovery = client.getBean(DiscoveryClient.class);
    ReactiveDiscoveryClient reactive = client.getBean(ReactiveDiscoveryClient.class);
    assertThat(discovery.getInstances("inventory")).isEmpty();

    put("inventory", "10.0.1.1:80", "10.0.1.1:80|1");
    await().atMost(Duration.ofSeconds(1)).pollInterval(Duration.ofMillis(10))
        .until(() -> weights(discovery.getInstances("inventory")), w -> w.equals(Map.of("10.0.1.1:80", "1")));

    put("inventory", "10.0.1.1:80", "10.0.1.1:80|7");
    await().atMost(Duration.ofSeconds(1)).pollInterval(Duration.ofMillis(10))
        .until(() -> weights(discovery.getInstances("inventory")), w -> w.equals(Map.of("10.0.1.1:80", "7")));
    assertThat(weights(reactive.getInstances("inventory").collectList().block(Duration.ofSeconds(5))))
        .isEqualTo(Map.of("10.0.1.1:80", "7"));

    put("inventory", "10.0.1.2:80", "10.0.1.2:80|0");
    await().atMost(Duration.ofSeconds(1)).pollInterval(Duration.ofMillis(10))
        .until(() -> weights(discovery.getInstances("inventory")),
            w -> w.equals(Map.of("10.0.1.1:80", "7", "10.0.1.2:80", "0")));

    writer.getKVClient().delete(bytes(PREFIX + "/inventory/10.0.1.1:80")).get(10, TimeUnit.SECONDS);
    await().atMost(Duration.ofSeconds(1)).pollInterval(Duration.ofMillis(10))
        .until(() -> weights(discovery.getInstances("inventory")), w -> w.equals(Map.of("10.0.1.2:80", "0")));
  }

  private static Map<String, String> weights(List<ServiceInstance> instances) {
    return instances.stream().collect(Collectors.toMap(
        ServiceInstance::getInstanceId, i -> i.getMetadata().get("weight")));
  }

  private static void put(String service, String address, String value) throws Exception {
    writer.getKVClient().put(bytes(PREFIX + "/" + service + "/" + address), bytes(value)).get(10, TimeUnit.SECONDS);
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
