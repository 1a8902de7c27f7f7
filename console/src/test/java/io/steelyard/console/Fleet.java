package io.steelyard.console;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.registry.ValueCodec;
import io.steelyard.registry.ValueFormat;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Registers instances straight into etcd, as a registration agent would (a JSON value on a
 * lease), and reads keys back independently of the console's code.
 */
final class Fleet {

  private final Client client;

  Fleet(Client client) {
    this.client = client;
  }

  long grant(long ttlSeconds) {
    return await(client.getLeaseClient().grant(ttlSeconds)).getID();
  }

  void register(String service, String address, int weight, Map<String, String> metadata,
      long lease) {
    String value = ValueCodec.encodeToString(
        new ServiceInstance(service, address, weight, metadata), ValueFormat.JSON);
    await(client.getKVClient().put(bytes("/services/" + service + "/" + address), bytes(value),
        PutOption.builder().withLeaseId(lease).build()));
  }

  Optional<KeyValue> get(String service, String address) {
    List<KeyValue> kvs = await(client.getKVClient()
        .get(bytes("/services/" + service + "/" + address), GetOption.DEFAULT)).getKvs();
    return kvs.isEmpty() ? Optional.empty() : Optional.of(kvs.get(0));
  }

  /** The weight etcd holds for the instance now. */
  int weight(String service, String address) {
    KeyValue kv = get(service, address).orElseThrow();
    return ValueCodec.decode(kv.getValue().getBytes()) instanceof
        io.steelyard.registry.DecodedValue.Accepted a ? a.weight() : -1;
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }

  private static <T> T await(java.util.concurrent.CompletableFuture<T> f) {
    try {
      return f.get(10, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
