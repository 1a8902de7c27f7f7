package io.steelyard.discovery;

import static io.steelyard.discovery.Etcd.bytes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.auth.Permission;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.internal.EtcdCalls;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link ServiceConfigWatcher} over {@link JetcdReader} against a real etcd with auth: a client whose
 * role may read exactly {@code /services/.config/greeter}, as docs/discovery.md tells operators to
 * grant, follows that key; a watch over the key as a prefix would be refused.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class ServiceConfigWatcherIT {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().rootPassword("rootpw").build();

  private static final String KEY = "/services/.config/greeter";
  private static final String ROUND_ROBIN = "{\"loadBalancingConfig\":[{\"round_robin\":{}}]}";
  private static final String PICK_FIRST = "{\"loadBalancingConfig\":[{\"pick_first\":{}}]}";

  private static Client root;
  private static final AtomicInteger reads = new AtomicInteger();

  @BeforeAll
  static void grantReadOnExactlyTheKey() throws Exception {
    root = connection("root:rootpw").connect();
    ByteSequence role = bytes("greeter-config");
    root.getAuthClient().roleAdd(role).get(10, TimeUnit.SECONDS);
    // An empty range end: the one key, not a prefix (etcdctl role grant-permission without --prefix).
    root.getAuthClient()
        .roleGrantPermission(role, bytes(KEY), ByteSequence.EMPTY, Permission.Type.READ)
        .get(10, TimeUnit.SECONDS);
    root.getAuthClient().userAdd(bytes("caller"), bytes("callerpw")).get(10, TimeUnit.SECONDS);
    root.getAuthClient().userGrantRole(bytes("caller"), role).get(10, TimeUnit.SECONDS);
  }

  @AfterAll
  static void closeRoot() {
    root.close();
  }

  private static EtcdConnection connection(String userPassword) {
    return EtcdConnection.builder().endpoints(etcd.endpoints()).userPassword(userPassword).build();
  }

  @Test
  void aRoleThatMayReadOnlyTheKeyFollowsItsChanges() {
    Etcd.put(root, KEY, ROUND_ROBIN);
    try (Client caller = connection("caller:callerpw").connect()) {
      List<StoredServiceConfig> seen = follow(caller, seen2 -> {
        await().atMost(Duration.ofSeconds(20))
            .until(() -> seen2.stream().anyMatch(c -> ROUND_ROBIN.equals(c.json())));
        Etcd.put(root, KEY, PICK_FIRST);
        await().atMost(Duration.ofSeconds(20))
            .until(() -> seen2.stream().anyMatch(c -> PICK_FIRST.equals(c.json())));
      });
      assertThat(seen).extracting(StoredServiceConfig::json).containsExactly(ROUND_ROBIN, PICK_FIRST);
      assertThat(reads).as("reads: the change came through the watch").hasValue(1);
    } finally {
      Etcd.delete(root, KEY);
    }
  }

  @Test
  void aLongerKeyIsNeverDelivered() {
    Etcd.put(root, KEY, ROUND_ROBIN);
    try {
      List<StoredServiceConfig> seen = follow(root, seen2 -> {
        await().atMost(Duration.ofSeconds(20))
            .until(() -> seen2.stream().anyMatch(c -> ROUND_ROBIN.equals(c.json())));
        Etcd.put(root, KEY + "2", "{\"greeter2\":true}");
        // Written after greeter2's: once it arrived, greeter2's would have too.
        Etcd.put(root, KEY, PICK_FIRST);
        await().atMost(Duration.ofSeconds(20))
            .until(() -> seen2.stream().anyMatch(c -> PICK_FIRST.equals(c.json())));
      });
      assertThat(seen).extracting(StoredServiceConfig::json).containsExactly(ROUND_ROBIN, PICK_FIRST);
    } finally {
      Etcd.delete(root, KEY);
      Etcd.delete(root, KEY + "2");
    }
  }

  private interface Steps {
    void run(List<StoredServiceConfig> seen);
  }

  /** Follows {@link #KEY} through {@code client} while {@code steps} run; what was delivered. */
  private static List<StoredServiceConfig> follow(Client client, Steps steps) {
    ScheduledExecutorService thread = Executors.newSingleThreadScheduledExecutor();
    Scheduler scheduler = Scheduler.of(thread);
    EtcdReader real = new JetcdReader(client, new EtcdCalls(Duration.ofSeconds(5)));
    // Counts reads: a refused watch shows as a read again after a backoff.
    EtcdReader reader = new EtcdReader() {
      @Override
      public CompletableFuture<Listing> list(String prefix) {
        return real.list(prefix);
      }

      @Override
      public CompletableFuture<Listing> get(String key) {
        reads.incrementAndGet();
        return real.get(key);
      }

      @Override
      public CompletableFuture<KeysAt> keysAt(String prefix, long revision) {
        return real.keysAt(prefix, revision);
      }

      @Override
      public Watching watch(String prefix, long fromRevision, WatchCallbacks callbacks) {
        return real.watch(prefix, fromRevision, callbacks);
      }

      @Override
      public Watching watchKey(String key, long fromRevision, WatchCallbacks callbacks) {
        return real.watchKey(key, fromRevision, callbacks);
      }
    };
    ClientSource clients = new ClientSource() {
      @Override
      public EtcdReader reader() {
        return reader;
      }

      @Override
      public void renew(EtcdReader failed) {}
    };
    ServiceConfigWatcher watcher = new ServiceConfigWatcher(
        clients, etcd.endpoints(), KeyLayout.defaults(), "greeter", WatcherConfig.DEFAULTS,
        scheduler, new Random(1));
    reads.set(0);
    List<StoredServiceConfig> seen = new CopyOnWriteArrayList<>();
    watcher.addListener(seen::add);
    try {
      steps.run(seen);
      return List.copyOf(seen);
    } finally {
      watcher.close();
      thread.shutdown();
    }
  }
}
