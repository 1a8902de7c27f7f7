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
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Sharing, release, statistics and client renewal of a registry, under fake time. */
class WatchRegistryTest {

  private static final EtcdConnection ETCD = EtcdConnection.of("http://etcd-a:2379");
  private static final EtcdConnection OTHER_ETCD = EtcdConnection.of("http://etcd-b:2379");

  private final FakeScheduler scheduler = new FakeScheduler();
  private final List<ScriptedEtcdReader> connected = new ArrayList<>();
  private final List<Long> connectedAtNanos = new ArrayList<>();
  private final WatchRegistry registry = new WatchRegistry(scheduler, new Random(1), Runnable::run, c -> {
    ScriptedEtcdReader r = new ScriptedEtcdReader(c.endpointsString() + "#" + (connected.size() + 1));
    connected.add(r);
    connectedAtNanos.add(scheduler.nanoTime());
    return r;
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
    assertThat(connected).hasSize(2);
    assertThat(registry.stats().activeWatches()).isEqualTo(3);
    assertThat(registry.stats().etcdClients()).isEqualTo(2);

    a1.close();
    a1.close(); // idempotent
    assertThat(registry.stats().activeWatches()).isEqualTo(3);
    a2.close();
    b.close();
    assertThat(registry.stats().activeWatches()).isEqualTo(1);
    assertThat(registry.stats().etcdClients()).isEqualTo(1);
    assertThat(connected.get(0).closed).isTrue();
    assertThat(connected.get(1).closed).isFalse();
    other.close();
    assertThat(connected.get(1).closed).isTrue();
    assertThat(registry.stats().activeWatches()).isZero();
    assertThat(registry.stats().etcdClients()).isZero();
  }

  @Test
  void maxStalenessIsMeasuredOnTheRegistrysClock() {
    scheduler.forward(1, TimeUnit.HOURS);
    subscribe(ETCD, "a");
    ScriptedEtcdReader reader = connected.get(0);
    reader.pendingList().complete(listing(10, kv("/services/a/x", "10.0.0.1:1", 3)));
    assertThat(registry.maxStaleness()).isZero();
    reader.openWatch().fail(new IOException("connection refused"));
    assertThat(registry.stats().staleWatches()).isEqualTo(1);
    scheduler.forward(42, TimeUnit.SECONDS);
    // The watcher retries meanwhile and stays stale: measured from the first failure.
    assertThat(registry.maxStaleness()).isEqualTo(Duration.ofSeconds(42));
  }

  @Test
  void aClientThatKeepsFailingIsReplacedOnceForAllItsWatchersAndAtMostEveryTenSeconds() {
    subscribe(ETCD, "a");
    subscribe(ETCD, "b");
    ScriptedEtcdReader first = connected.get(0);
    failEveryAttemptUntilANewClientIsMade(first);
    // Both watchers reported the failing client; it was replaced once, not before 10 s.
    assertThat(connected).hasSize(2);
    assertThat(connectedAtNanos.get(1)).isGreaterThanOrEqualTo(WatchRegistry.MIN_RENEW_INTERVAL_NANOS);
    assertThat(first.closed).isTrue();

    ScriptedEtcdReader second = connected.get(1);
    failEveryAttemptUntilANewClientIsMade(second);
    assertThat(connected).hasSize(3);
    assertThat(connectedAtNanos.get(2) - connectedAtNanos.get(1))
        .isGreaterThanOrEqualTo(WatchRegistry.MIN_RENEW_INTERVAL_NANOS);
    assertThat(second.lists).as("both watchers moved to the second client").hasSizeGreaterThanOrEqualTo(2);

    // The next attempts go to the third client, and they succeed.
    scheduler.forward(5, TimeUnit.SECONDS);
    ScriptedEtcdReader third = connected.get(2);
    assertThat(third.lists).hasSize(2);
    third.lists.forEach(f -> f.complete(listing(10)));
    assertThat(registry.stats().staleWatches()).isZero();
  }

  private void failEveryAttemptUntilANewClientIsMade(ScriptedEtcdReader reader) {
    int before = connected.size();
    for (int i = 0; i < 1_000 && connected.size() == before; i++) {
      reader.lists.stream().filter(f -> !f.isDone()).toList()
          .forEach(f -> f.completeExceptionally(new IOException("connection refused")));
      scheduler.forward(100, TimeUnit.MILLISECONDS);
    }
  }
}
