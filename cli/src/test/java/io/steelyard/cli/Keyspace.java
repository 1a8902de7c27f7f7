package io.steelyard.cli;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/** Direct etcd access for tests: what the CLI should have written, independent of its code. */
final class Keyspace {

  /**
   * Every key with its value, lease and mod revision, plus the store revision: equal snapshots
   * mean nothing was written in between.
   */
  record Snapshot(long revision, List<String> entries) {}

  private final Client client;

  Keyspace(Client client) {
    this.client = client;
  }

  Snapshot snapshot() {
    ByteSequence zero = ByteSequence.from(new byte[] {0});
    GetResponse r = get(zero, GetOption.builder().withRange(zero).build());
    return new Snapshot(
        r.getHeader().getRevision(),
        r.getKvs().stream()
            .map(
                kv ->
                    text(kv.getKey()) + "=" + text(kv.getValue()) + " lease=" + kv.getLease()
                        + " mod=" + kv.getModRevision())
            .toList());
  }

  Optional<KeyValue> get(String key) {
    List<KeyValue> kvs = get(bytes(key), GetOption.DEFAULT).getKvs();
    return kvs.isEmpty() ? Optional.empty() : Optional.of(kvs.get(0));
  }

  String value(String key) {
    return get(key).map(kv -> text(kv.getValue())).orElse(null);
  }

  void put(String key, String value) {
    put(key, value, 0);
  }

  void put(String key, String value, long leaseId) {
    PutOption o = leaseId == 0 ? PutOption.DEFAULT : PutOption.builder().withLeaseId(leaseId).build();
    await(client.getKVClient().put(bytes(key), bytes(value), o));
  }

  void delete(String key) {
    await(client.getKVClient().delete(bytes(key)));
  }

  long grant(long ttlSeconds) {
    return await(client.getLeaseClient().grant(ttlSeconds)).getID();
  }

  private GetResponse get(ByteSequence key, GetOption option) {
    return await(client.getKVClient().get(key, option));
  }

  static <T> T await(java.util.concurrent.CompletableFuture<T> f) {
    try {
      return f.get(10, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }

  static String text(ByteSequence b) {
    return b.toString(StandardCharsets.UTF_8);
  }
}
