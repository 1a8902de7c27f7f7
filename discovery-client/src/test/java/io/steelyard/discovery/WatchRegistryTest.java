package io.steelyard.discovery;

import static io.steelyard.discovery.ScriptedEtcdReader.kv;
import static io.steelyard.discovery.ScriptedEtcdReader.listing;
import static org.assertj.core.api.Assertions.assertThat;

import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Sharing, release, statistics and client renewal of a registry, under fake time. */
class WatchRegistryTest {

  // jetcd dials lazily: nothing listens on these ports, and nothing here contacts them.
  private static final EtcdConnection ETCD = EtcdConnection.of("http://127.0.0.1:9");
  private static final EtcdConnection OTHER_ETCD = EtcdConnection.of("http://127.0.0.1:19");

  /** A connection's shared client in the sharing tests: one scripted reader, never renewed. */
  private static final class ScriptedClient implements WatchRegistry.SharedClient {
    final ScriptedEtcdReader reader;
    boolean closed;

    ScriptedClient(String name) {
      reader = new ScriptedEtcdReader(name);
    }

    @Override
    public EtcdReader reader() {
      return reader;
    }

    @Override
    public void renew(EtcdReader failed) {}

    @Override
    public void close() {
      closed = true;
    }
  }

  private final InlineFakeScheduler scheduler = new InlineFakeScheduler();
  private final List<ScriptedClient> clients = new ArrayList<>();
  private final WatchRegistry registry = new WatchRegistry(scheduler, new Random(1), Runnable::run, c -> {
    ScriptedClient client = new ScriptedClient(c.endpointsString());
    clients.add(client);
    return client;
  });

  private static final WatchListener IGNORE = new WatchListener() {
    @Override
    public void onSnapshot(Snapshot snapshot) {}

    @Override
    public void onUnavailable(Throwable cause) {}
  };

  private WatchRegistry.Subscription subscribe(EtcdConnection etcd, String service) {
    return registry.subscribe(etcd, KeyLayout.defaults(), service, WatcherConfig.DEFAULTS, IGNORE);
  }

  @Test
  void oneWatcherPerServiceAndOneClientPerEtcdReleasedByTheLastUser() {
    WatchRegistry.Subscription a1 = subscribe(ETCD, "a");
    WatchRegistry.Subscription a2 = subscribe(ETCD, "a");
    WatchRegistry.Subscription b = subscribe(ETCD, "b");
    WatchRegistry.Subscription other = subscribe(OTHER_ETCD, "a");
    assertThat(a1.watcher()).isSameAs(a2.watcher());
    assertThat(clients).hasSize(2);
    assertThat(registry.stats().activeWatches()).isEqualTo(3);
    assertThat(registry.stats().etcdClients()).isEqualTo(2);

    a1.close();
    a1.close(); // idempotent
    assertThat(registry.stats().activeWatches()).isEqualTo(3);
    a2.close();
    b.close();
    assertThat(registry.stats().activeWatches()).isEqualTo(1);
    assertThat(registry.stats().etcdClients()).isEqualTo(1);
    assertThat(clients.get(0).closed).isTrue();
    assertThat(clients.get(1).closed).isFalse();
    other.close();
    assertThat(clients.get(1).closed).isTrue();
    assertThat(registry.stats().activeWatches()).isZero();
    assertThat(registry.stats().etcdClients()).isZero();
  }

  @Test
  void maxStalenessIsMeasuredOnTheRegistrysClock() {
    scheduler.forward(1, TimeUnit.HOURS);
    subscribe(ETCD, "a");
    ScriptedEtcdReader reader = clients.get(0).reader;
    reader.pendingList().complete(listing(10, kv("/services/a/x", "10.0.0.1:1", 3)));
    assertThat(registry.maxStaleness()).isZero();
    reader.openWatch().fail(new IOException("connection refused"));
    assertThat(registry.stats().staleWatches()).isEqualTo(1);
    scheduler.forward(42, TimeUnit.SECONDS);
    // The watcher retries meanwhile and stays stale: measured from the first failure.
    assertThat(registry.maxStaleness()).isEqualTo(Duration.ofSeconds(42));
  }

  /**
   * The production client renewal (registry-core's RenewableClient under {@link RenewingClient})
   * on the fake clock, with a scripted reader for each jetcd client it makes.
   */
  @Test
  void aClientThatKeepsFailingIsReplacedOnceForAllItsWatchersAndAtMostEveryTenSeconds() {
    List<ScriptedEtcdReader> readers = new ArrayList<>();
    List<Runnable> closes = new ArrayList<>();
    List<Long> renewedAtNanos = new ArrayList<>(); // a replaced client goes to the closer at once
    Executor closer = close -> {
      closes.add(close);
      renewedAtNanos.add(scheduler.nanoTime());
    };
    WatchRegistry renewing = new WatchRegistry(scheduler, new Random(1), Runnable::run, c ->
        new RenewingClient(RenewingClient.renewable(c, scheduler, closer), client -> {
          ScriptedEtcdReader r = new ScriptedEtcdReader("client-" + (readers.size() + 1));
          readers.add(r);
          return r;
        }));
    WatchRegistry.Subscription a =
        renewing.subscribe(ETCD, KeyLayout.defaults(), "a", WatcherConfig.DEFAULTS, IGNORE);
    WatchRegistry.Subscription b =
        renewing.subscribe(ETCD, KeyLayout.defaults(), "b", WatcherConfig.DEFAULTS, IGNORE);
    ScriptedEtcdReader first = readers.get(0);
    assertThat(first.lists).as("both watchers list through the one client").hasSize(2);

    failEveryAttemptUntilANewReader(readers);
    // Both watchers reported the failing client; it was replaced once, not before 10 s.
    assertThat(readers).hasSize(2);
    assertThat(renewedAtNanos).as("the replaced client, handed to the closer").hasSize(1);
    assertThat(renewedAtNanos.get(0)).isGreaterThanOrEqualTo(TimeUnit.SECONDS.toNanos(10));

    ScriptedEtcdReader second = readers.get(1);
    failEveryAttemptUntilANewReader(readers);
    assertThat(readers).hasSize(3);
    assertThat(renewedAtNanos).hasSize(2);
    assertThat(renewedAtNanos.get(1) - renewedAtNanos.get(0))
        .isGreaterThanOrEqualTo(TimeUnit.SECONDS.toNanos(10));
    assertThat(second.lists).as("both watchers moved to the second client").hasSizeGreaterThanOrEqualTo(2);

    // The next attempts go to the third client, and they succeed.
    scheduler.forward(5, TimeUnit.SECONDS);
    ScriptedEtcdReader third = readers.get(2);
    assertThat(third.lists).hasSize(2);
    third.lists.forEach(f -> f.complete(listing(10)));
    assertThat(renewing.stats().staleWatches()).isZero();
    a.close();
    b.close();
    closes.forEach(Runnable::run);
  }

  private void failEveryAttemptUntilANewReader(List<ScriptedEtcdReader> readers) {
    int before = readers.size();
    ScriptedEtcdReader failing = readers.get(before - 1);
    for (int i = 0; i < 1_000 && readers.size() == before; i++) {
      failing.lists.stream().filter(f -> !f.isDone()).toList()
          .forEach(f -> f.completeExceptionally(new IOException("connection refused")));
      scheduler.forward(100, TimeUnit.MILLISECONDS);
    }
  }
}
