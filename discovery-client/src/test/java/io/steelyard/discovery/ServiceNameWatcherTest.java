package io.steelyard.discovery;

import static io.steelyard.discovery.ScriptedEtcdReader.kv;
import static io.steelyard.discovery.ScriptedEtcdReader.listing;
import static io.steelyard.discovery.ScriptedEtcdReader.put;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.RegistryException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** {@link ServiceNameWatcher} under fake time, over a scripted etcd. */
class ServiceNameWatcherTest {

  private final InlineFakeScheduler scheduler = new InlineFakeScheduler();
  private final ScriptedEtcdReader etcd = new ScriptedEtcdReader("etcd");
  private final List<EtcdReader> renewed = new ArrayList<>();
  private final List<Boolean> closed = new ArrayList<>();
  private final WatchRegistry.SharedClient clients = new WatchRegistry.SharedClient() {
    @Override
    public EtcdReader reader() {
      return etcd;
    }

    @Override
    public void renew(EtcdReader failed) {
      renewed.add(failed);
    }

    @Override
    public void close() {
      closed.add(true);
    }
  };
  private final Executor inline = Runnable::run;
  private final List<Set<String>> seen = new ArrayList<>();
  private final List<RegistryException> failures = new ArrayList<>();
  private final ServiceNameWatcher watcher = new ServiceNameWatcher(
      clients, "http://etcd:2379", KeyLayout.defaults(), WatcherConfig.DEFAULTS, scheduler, inline,
      new Random(1), new ServiceNameWatcher.Listener() {
        @Override
        public void onNames(java.util.SortedSet<String> names) {
          seen.add(names);
        }

        @Override
        public void onFailure(RegistryException error) {
          failures.add(error);
        }
      });

  private static RuntimeException unavailable() {
    return Status.UNAVAILABLE.withDescription("connection refused").asRuntimeException();
  }

  @Test
  void listsTheRegistryPrefixThenWatchesFromTheNextRevision() {
    watcher.start();

    etcd.pendingList().complete(listing(7,
        kv("/services/greeter/h:1", "h:1|1", 3),
        kv("/services/greeter/h:2", "h:2|1", 4),
        kv("/services/orders/h:3", "h:3|1", 5)));

    assertThat(seen).containsExactly(Set.of("greeter", "orders"));
    assertThat(watcher.names()).containsExactly("greeter", "orders");
    assertThat(watcher.listed()).isTrue();
    assertThat(etcd.openWatch().prefix).isEqualTo("/services/");
    assertThat(etcd.openWatch().fromRevision).isEqualTo(8);
  }

  @Test
  void anEmptyRegistryIsListedToo() {
    watcher.start();
    assertThat(watcher.listed()).isFalse();

    etcd.pendingList().complete(listing(2));

    assertThat(seen).containsExactly(Set.of());
    assertThat(watcher.listed()).isTrue();
  }

  @Test
  void aServiceComesWithItsFirstKeyAndGoesWithItsLast() {
    watcher.start();
    etcd.pendingList().complete(listing(7, kv("/services/greeter/h:1", "h:1|1", 3)));

    etcd.openWatch().events(8, put("/services/orders/h:3", "h:3|1", 8));
    etcd.openWatch().events(9, put("/services/orders/h:4", "h:4|1", 9), put("/services/greeter/h:1", "h:1|5", 9));
    etcd.openWatch().events(10, EtcdReader.Event.delete("/services/orders/h:3", 10));
    etcd.openWatch().events(11, EtcdReader.Event.delete("/services/orders/h:4", 11));

    assertThat(seen).containsExactly(
        Set.of("greeter"), Set.of("greeter", "orders"), Set.of("greeter"));
  }

  @Test
  void drainNotesAndServiceConfigsAreNoServicesAndNotMalformed() {
    watcher.start();
    etcd.pendingList().complete(listing(7,
        kv("/services/.drained/greeter/h:1", "5", 3),
        kv("/services/.config/greeter", "{}", 4)));

    etcd.openWatch().events(8, put("/services/.config/orders", "{}", 8));

    assertThat(seen).containsExactly(Set.of());
    assertThat(watcher.malformedCount()).isZero();
  }

  @Test
  void malformedKeysAreSkippedAndCounted() {
    watcher.start();
    etcd.pendingList().complete(listing(7,
        kv("/services/greeter", "x", 3),
        kv("/services/bad name/h:1", "h:1|1", 4),
        kv("/services/greeter/h:1", "h:1|1", 5)));

    etcd.openWatch().events(8, put("/services/-x/h:1", "h:1|1", 8));

    assertThat(watcher.names()).containsExactly("greeter");
    assertThat(watcher.malformedCount()).isEqualTo(3);
  }

  @Test
  void aFailedListingKeepsNothingAndRetriesAfterTheBackoff() {
    watcher.start();

    etcd.pendingList().completeExceptionally(unavailable());

    assertThat(watcher.isStale()).isTrue();
    assertThat(watcher.listed()).isFalse();
    assertThat(failures).singleElement()
        .extracting(RegistryException::kind).isEqualTo(RegistryException.Kind.UNAVAILABLE);
    assertThat(etcd.lists).hasSize(1);
    scheduler.forward(WatcherDefaults.BACKOFF_MAX_MILLIS, TimeUnit.MILLISECONDS);
    assertThat(etcd.lists).hasSize(2);

    etcd.pendingList().complete(listing(3, kv("/services/greeter/h:1", "h:1|1", 2)));

    assertThat(watcher.isStale()).isFalse();
    assertThat(watcher.names()).containsExactly("greeter");
  }

  @Test
  void aFailedWatchKeepsTheNamesAndResumesFromTheLastRevisionSeen() {
    watcher.start();
    etcd.pendingList().complete(listing(7, kv("/services/greeter/h:1", "h:1|1", 3)));
    etcd.openWatch().events(9, put("/services/orders/h:3", "h:3|1", 9));

    scheduler.forward(1, TimeUnit.SECONDS);
    Instant failedAt = Instant.ofEpochMilli(scheduler.currentTimeMillis());
    etcd.openWatch().fail(unavailable());

    assertThat(watcher.isStale()).isTrue();
    assertThat(watcher.names()).containsExactly("greeter", "orders");
    scheduler.forward(WatcherDefaults.BACKOFF_MAX_MILLIS, TimeUnit.MILLISECONDS);
    assertThat(etcd.lists).as("no new listing").hasSize(1);
    assertThat(etcd.openWatch().fromRevision).isEqualTo(10);
    assertThat(watcher.staleSince()).as("since the first failure").contains(failedAt);

    etcd.openWatch().confirm(1, 12);

    assertThat(watcher.isStale()).isFalse();
    assertThat(watcher.staleSince()).isEmpty();
  }

  @Test
  void aCompactedWatchListsAgain() {
    watcher.start();
    etcd.pendingList().complete(listing(7,
        kv("/services/greeter/h:1", "h:1|1", 3), kv("/services/orders/h:2", "h:2|1", 4)));

    etcd.openWatch().compacted(20);
    scheduler.forward(WatcherDefaults.BACKOFF_MAX_MILLIS, TimeUnit.MILLISECONDS);

    assertThat(failures).singleElement()
        .extracting(RegistryException::kind).isEqualTo(RegistryException.Kind.COMPACTED);
    etcd.pendingList().complete(listing(25, kv("/services/orders/h:2", "h:2|1", 4)));
    assertThat(watcher.names()).containsExactly("orders");
    assertThat(etcd.openWatch().fromRevision).isEqualTo(26);
  }

  @Test
  void failuresInARowRenewTheClient() {
    watcher.start();

    etcd.pendingList().completeExceptionally(unavailable());
    assertThat(renewed).isEmpty();
    scheduler.forward(WatcherDefaults.BACKOFF_MAX_MILLIS, TimeUnit.MILLISECONDS);
    etcd.pendingList().completeExceptionally(unavailable());

    assertThat(renewed).containsExactly(etcd);
  }

  @Test
  void aRefusalWaitsTheLongestDelay() {
    watcher.start();

    etcd.pendingList().completeExceptionally(
        Status.PERMISSION_DENIED.withDescription("etcdserver: permission denied").asRuntimeException());
    scheduler.forward(WatcherDefaults.BACKOFF_INITIAL_MILLIS * 2, TimeUnit.MILLISECONDS);

    assertThat(failures).singleElement().extracting(e -> e.kind().refused()).isEqualTo(true);
    assertThat(etcd.lists).as("no quick retry after a refusal").hasSize(1);
    assertThat(renewed).isEmpty();
  }

  @Test
  void closeStopsTheWatchAndClosesTheClient() {
    watcher.start();
    etcd.pendingList().complete(listing(7, kv("/services/greeter/h:1", "h:1|1", 3)));

    watcher.close();
    etcd.watches.get(0).events(8, put("/services/orders/h:3", "h:3|1", 8));

    assertThat(etcd.watches.get(0).cancelled).isTrue();
    assertThat(closed).containsExactly(true);
    assertThat(seen).containsExactly(Set.of("greeter"));
  }
}
