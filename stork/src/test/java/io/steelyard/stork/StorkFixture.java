package io.steelyard.stork;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.smallrye.stork.Stork;
import io.smallrye.stork.api.Service;
import io.smallrye.stork.api.ServiceInstance;
import io.smallrye.stork.test.TestConfigProvider;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;

/**
 * Stork through its programmatic API, as Stork's own providers are tested: services defined in
 * {@link TestConfigProvider}, {@link Stork#initialize()} per test, the discoveries it made closed
 * afterwards (Stork itself never closes one) and {@link Stork#shutdown()}.
 */
final class StorkFixture implements AutoCloseable {

  private Stork stork;

  StorkFixture() {
    TestConfigProvider.clear();
  }

  /** Adds a service; call before {@link #stork()}. */
  StorkFixture service(
      String name, @Nullable String loadBalancer, Map<String, String> lbParams,
      Map<String, String> discoveryParams) {
    TestConfigProvider.addServiceConfig(name, loadBalancer, "steelyard", null, lbParams, discoveryParams, null);
    return this;
  }

  /** Adds a service with the steelyard registrar only; call before {@link #stork()}. */
  StorkFixture registrar(String name, Map<String, String> registrarParams) {
    TestConfigProvider.addServiceConfig(name, null, null, "steelyard", null, null, registrarParams);
    return this;
  }

  /** Stork over the services added so far (Stork's initialisation: a bad attribute throws here). */
  Stork stork() {
    if (stork == null) {
      Stork.initialize();
      stork = Stork.getInstance();
    }
    return stork;
  }

  Service service(String name) {
    return stork().getService(name);
  }

  SteelyardServiceDiscovery discovery(String name) {
    return (SteelyardServiceDiscovery) service(name).getServiceDiscovery();
  }

  List<ServiceInstance> instances(String name) {
    return service(name).getInstances().await().atMost(Duration.ofSeconds(10));
  }

  @Override
  public void close() throws Exception {
    if (stork != null) {
      for (Service s : stork.getServices().values()) {
        if (s.getServiceDiscovery() instanceof AutoCloseable c) {
          c.close();
        }
      }
    }
    Stork.shutdown();
    TestConfigProvider.clear();
  }

  static void put(Client client, String key, String value) throws Exception {
    client.getKVClient().put(bytes(key), bytes(value)).get(10, TimeUnit.SECONDS);
  }

  static void delete(Client client, String key) throws Exception {
    client.getKVClient().delete(bytes(key)).get(10, TimeUnit.SECONDS);
  }

  @Nullable
  static KeyValue get(Client client, String key) throws Exception {
    List<KeyValue> kvs = client.getKVClient().get(bytes(key)).get(10, TimeUnit.SECONDS).getKvs();
    return kvs.isEmpty() ? null : kvs.get(0);
  }

  static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
