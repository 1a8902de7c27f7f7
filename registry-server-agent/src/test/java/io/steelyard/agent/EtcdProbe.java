package io.steelyard.agent;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.LeaseOption;
import io.steelyard.testkit.EtcdCluster;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Looks at etcd from the outside, as an operator would with etcdctl. Test helper: open one for a
 * few lines with {@code try (EtcdProbe probe = new EtcdProbe(etcd.clientEndpoints()))}, or one for
 * a whole test class as an extension that connects once the cluster is up and closes after it:
 *
 * <pre>{@code
 * @RegisterExtension
 * @Order(EtcdProbe.AFTER_THE_CLUSTER)
 * static final EtcdProbe probe = EtcdProbe.of(etcd);
 * }</pre>
 */
final class EtcdProbe implements AutoCloseable, BeforeAllCallback, AfterAllCallback {

  /**
   * The extension order of a class-wide probe: after every extension without an order (the
   * cluster's), so its {@code beforeAll} runs once the cluster is up and its {@code afterAll}
   * before the cluster stops.
   */
  static final int AFTER_THE_CLUSTER = Integer.MAX_VALUE;

  private final Supplier<List<URI>> endpoints;
  /** Set by the constructor, or by {@link #beforeAll} for a class-wide probe. */
  Client client;

  EtcdProbe(List<URI> endpoints) {
    this.endpoints = () -> endpoints;
    this.client = connect(endpoints);
  }

  private EtcdProbe(Supplier<List<URI>> endpoints) {
    this.endpoints = endpoints;
  }

  /** A probe for a whole test class of {@code etcd}; see the class comment. */
  static EtcdProbe of(EtcdCluster etcd) {
    return new EtcdProbe(etcd::clientEndpoints);
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    client = connect(endpoints.get());
  }

  @Override
  public void afterAll(ExtensionContext context) {
    close();
  }

  private static Client connect(List<URI> endpoints) {
    return Client.builder().endpoints(endpoints.toArray(URI[]::new)).build();
  }

  /** The key's current key-value, empty when absent; throws when etcd does not answer in 2 s. */
  Optional<KeyValue> get(String key) {
    try {
      List<KeyValue> kvs = client.getKVClient().get(bytes(key)).get(2, TimeUnit.SECONDS).getKvs();
      return kvs.isEmpty() ? Optional.empty() : Optional.of(kvs.get(0));
    } catch (Exception e) {
      throw new IllegalStateException("etcd get " + key + " failed", e);
    }
  }

  /** Like {@link #get}, but empty also when etcd does not answer. */
  Optional<KeyValue> tryGet(String key) {
    try {
      return get(key);
    } catch (IllegalStateException e) {
      return Optional.empty();
    }
  }

  String value(String key) {
    return get(key).map(kv -> kv.getValue().toString(StandardCharsets.UTF_8)).orElse(null);
  }

  long lease(String key) {
    return get(key).map(KeyValue::getLease).orElse(0L);
  }

  long ttl(long leaseId) throws Exception {
    return client.getLeaseClient().timeToLive(leaseId, LeaseOption.DEFAULT)
        .get(2, TimeUnit.SECONDS).getTTL();
  }

  long grantedTtl(long leaseId) throws Exception {
    return client.getLeaseClient().timeToLive(leaseId, LeaseOption.DEFAULT)
        .get(2, TimeUnit.SECONDS).getGrantedTTL();
  }

  /** What {@code etcdctl lease revoke} does. */
  void revoke(long leaseId) throws Exception {
    client.getLeaseClient().revoke(leaseId).get(2, TimeUnit.SECONDS);
  }

  static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }

  @Override
  public void close() {
    if (client != null) {
      client.close();
    }
  }
}
