package io.steelyard.discovery;

import static io.steelyard.discovery.Etcd.bytes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Txn;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.steelyard.discovery.EtcdReader.KeyVersion;
import io.steelyard.discovery.EtcdReader.Listing;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.registry.ValueCodec;
import io.steelyard.registry.ValueFormat;
import io.steelyard.registry.internal.EtcdCalls;
import io.steelyard.testkit.EtcdCluster;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Paged listings against a real etcd: a service whose listing is larger than gRPC's 4 MiB inbound
 * limit lists completely, and the pages form one snapshot even while etcd is written and
 * compacted under them.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class LargeListingIT {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  private static Client client;
  private static EtcdCalls calls;

  @BeforeAll
  static void connect() {
    client = EtcdConnection.of(etcd.endpoints()).connect();
    calls = new EtcdCalls(Duration.ofSeconds(10));
  }

  @AfterAll
  static void close() {
    client.close();
  }

  /** Writes {@code values} under {@code prefix} in transactions of 100 puts (etcd allows 128). */
  private static void putAll(Map<String, byte[]> values) throws Exception {
    List<CompletableFuture<?>> txns = new ArrayList<>();
    List<Op> ops = new ArrayList<>();
    for (Map.Entry<String, byte[]> e : values.entrySet()) {
      ops.add(Op.put(bytes(e.getKey()), ByteSequence.from(e.getValue()), PutOption.DEFAULT));
      if (ops.size() == 100) {
        Txn txn = client.getKVClient().txn();
        txns.add(txn.Then(ops.toArray(Op[]::new)).commit());
        ops.clear();
      }
    }
    if (!ops.isEmpty()) {
      txns.add(client.getKVClient().txn().Then(ops.toArray(Op[]::new)).commit());
    }
    CompletableFuture.allOf(txns.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
  }

  private static String address(int i) {
    return "10." + (i >> 16 & 255) + "." + (i >> 8 & 255) + "." + (i & 255) + ":50051";
  }

  @Test
  void aServiceOverTheClientsMessageLimitListsCompletely() throws Exception {
    // 12,000 JSON values of ~470 bytes with their keys: about 6 MB, over the 4 MiB inbound limit
    // that one response would have to fit.
    String zone = "z".repeat(400);
    Map<String, byte[]> values = new TreeMap<>();
    long bytes = 0;
    for (int i = 0; i < 12_000; i++) {
      String key = "/services/large/" + address(i);
      byte[] value = ValueCodec.encode(
          new ServiceInstance("large", address(i), 1 + i % 7, Map.of("zone", zone)), ValueFormat.JSON);
      values.put(key, value);
      bytes += key.length() + value.length;
    }
    assertThat(bytes).isGreaterThan(5L << 20);
    putAll(values);

    try (ServiceWatcher w = ServiceWatcher.open(
        EtcdConnection.of(etcd.endpoints()), io.steelyard.registry.KeyLayout.defaults(), "large", s -> {})) {
      await().atMost(Duration.ofSeconds(60)).until(() -> w.current() != null);
      Snapshot s = w.current();
      assertThat(s.instances()).hasSize(12_000);
      assertThat(s.malformed()).isEmpty();
      assertThat(s.instances().get(0).metadata()).containsEntry("zone", zone);
    }
  }

  @Test
  void pagesFormOneSnapshotWhileEtcdIsWritten() throws Exception {
    String prefix = "/services/churn/";
    Map<String, byte[]> values = new TreeMap<>();
    for (int i = 0; i < 300; i++) {
      values.put(prefix + address(i), (address(i) + "|1").getBytes(StandardCharsets.UTF_8));
    }
    putAll(values);
    AtomicBoolean stop = new AtomicBoolean();
    Thread writer = new Thread(() -> {
      Random random = new Random(17);
      int n = 0;
      while (!stop.get()) {
        int i = random.nextInt(400); // updates, new keys and deletes across the whole range
        String key = prefix + address(i);
        CompletableFuture<?> f = random.nextInt(4) == 0
            ? client.getKVClient().delete(bytes(key))
            : client.getKVClient().put(bytes(key), bytes(address(i) + "|" + (++n % 100 + 1)));
        f.join();
      }
    }, "churn-writer");
    writer.start();
    try {
      JetcdReader reader = new JetcdReader(client, calls, 7); // ~40 pages per listing
      for (int round = 0; round < 3; round++) {
        Listing listing = reader.list(prefix).get(30, TimeUnit.SECONDS);
        assertThat(versions(listing.keys())).isEqualTo(atRevision(prefix, listing.revision()));
      }
    } finally {
      stop.set(true);
      writer.join(10_000);
    }
  }

  @Test
  void aCompactionBetweenPagesStartsTheListingAgainAtTheCurrentRevision() throws Exception {
    String prefix = "/services/compacted/";
    Map<String, byte[]> values = new TreeMap<>();
    for (int i = 0; i < 50; i++) {
      values.put(prefix + address(i), (address(i) + "|1").getBytes(StandardCharsets.UTF_8));
    }
    putAll(values);
    JetcdReader reader = new JetcdReader(client, calls, 10);
    AtomicBoolean compacted = new AtomicBoolean();
    PagedListing.Pages compactingAfterThePage = (from, end, revision, limit) ->
        reader.page(prefix, from, end, revision, limit).thenCompose(page -> {
          if (!compacted.compareAndSet(false, true)) {
            return CompletableFuture.completedFuture(page);
          }
          // After the first page: a change, then a compaction up to it (async: we are on a
          // jetcd thread, which must not wait for jetcd).
          return client.getKVClient().put(bytes(prefix + address(49)), bytes(address(49) + "|9"))
              .thenCompose(put -> client.getKVClient().compact(put.getHeader().getRevision()))
              .thenApply(done -> page);
        });

    Listing listing = PagedListing.list(compactingAfterThePage, prefix, 10).get(30, TimeUnit.SECONDS);

    assertThat(compacted).isTrue();
    assertThat(listing.keys()).hasSize(50);
    assertThat(versions(listing.keys())).isEqualTo(atRevision(prefix, listing.revision()));
    assertThat(listing.keys())
        .filteredOn(k -> k.key().equals(prefix + address(49)))
        .singleElement()
        .satisfies(k -> assertThat(new String(k.value(), StandardCharsets.UTF_8)).endsWith("|9"));
  }

  private static Map<String, Long> versions(List<KeyVersion> keys) {
    Map<String, Long> out = new TreeMap<>();
    keys.forEach(k -> out.put(k.key(), k.modRevision()));
    return out;
  }

  /** What one plain range request says was under {@code prefix} at {@code revision}. */
  private static Map<String, Long> atRevision(String prefix, long revision) throws Exception {
    Map<String, Long> out = new TreeMap<>();
    for (KeyValue kv : client.getKVClient()
        .get(bytes(prefix), GetOption.builder().isPrefix(true).withRevision(revision).build())
        .get(10, TimeUnit.SECONDS).getKvs()) {
      out.put(kv.getKey().toString(StandardCharsets.UTF_8), kv.getModRevision());
    }
    return out;
  }
}
