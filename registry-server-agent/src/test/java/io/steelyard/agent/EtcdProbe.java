package io.steelyard.agent;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.LeaseOption;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/** Looks at etcd from the outside, as an operator would with etcdctl. Test helper. */
final class EtcdProbe implements AutoCloseable {

  final Client client;

  EtcdProbe(List<URI> endpoints) {
    this.client = Client.builder().endpoints(endpoints.toArray(URI[]::new)).build();
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
    client.close();
  }
}
