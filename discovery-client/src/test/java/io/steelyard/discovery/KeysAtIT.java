package io.steelyard.discovery;

import static io.steelyard.discovery.Etcd.compact;
import static io.steelyard.discovery.Etcd.delete;
import static io.steelyard.discovery.Etcd.put;
import static org.assertj.core.api.Assertions.assertThat;

import io.etcd.jetcd.Client;
import io.steelyard.discovery.EtcdReader.KeysAt;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.internal.EtcdCalls;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link JetcdReader#keysAt}, the check a watcher makes before resuming, against a real etcd: the
 * keys of a prefix at a past revision with their mod revisions, in pages; a compacted revision
 * and one etcd has not reached told apart.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class KeysAtIT {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  private static Client client;
  private static JetcdReader reader;

  @BeforeAll
  static void connect() {
    client = EtcdConnection.of(etcd.endpoints()).connect();
    // Pages of 2 keys, so a prefix of 3 takes two pages at the one revision.
    reader = new JetcdReader(client, new EtcdCalls(Duration.ofSeconds(10)), 2);
  }

  @AfterAll
  static void close() {
    client.close();
  }

  private static KeysAt keysAt(String prefix, long revision) throws Exception {
    return reader.keysAt(prefix, revision).get(20, TimeUnit.SECONDS);
  }

  @Test
  void theKeysOfThePrefixAtAPastRevisionWithTheirModRevisions() throws Exception {
    String p = "/services/past/";
    long a = put(client, p + "a", "10.0.0.1:1|1");
    long b = put(client, p + "b", "10.0.0.2:1|1");
    long c = put(client, p + "c", "10.0.0.3:1|1");
    put(client, "/services/past2/x", "10.0.0.9:1|1"); // another service, same leading bytes
    long then = put(client, p + "a", "10.0.0.1:1|7");
    delete(client, p + "b");
    put(client, p + "d", "10.0.0.4:1|1");

    assertThat(keysAt(p, c)).isEqualTo(KeysAt.listed(Map.of(p + "a", a, p + "b", b, p + "c", c)));
    assertThat(keysAt(p, then + 1)).isEqualTo(KeysAt.listed(Map.of(p + "a", then, p + "c", c)));
  }

  @Test
  void aCompactedRevisionAndOneEtcdHasNotReachedAreToldApart() throws Exception {
    String p = "/services/gone/";
    long old = put(client, p + "a", "10.0.0.1:1|1");
    long now = put(client, p + "a", "10.0.0.1:1|2");
    compact(client, now);

    assertThat(keysAt(p, old)).isEqualTo(KeysAt.compacted());
    assertThat(keysAt(p, now + 1_000)).isEqualTo(KeysAt.notReached());
    assertThat(keysAt(p, now)).isEqualTo(KeysAt.listed(Map.of(p + "a", now)));
  }
}
