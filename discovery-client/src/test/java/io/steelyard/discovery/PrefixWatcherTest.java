package io.steelyard.discovery;

import static io.steelyard.discovery.ScriptedEtcdReader.keysAt;
import static io.steelyard.discovery.ScriptedEtcdReader.kv;
import static io.steelyard.discovery.ScriptedEtcdReader.listing;
import static io.steelyard.discovery.ScriptedEtcdReader.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import io.steelyard.discovery.ScriptedEtcdReader.ScriptedWatch;
import io.grpc.Status;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.ServiceInstance;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The watch engine's recovery paths, under fake time, against a scripted {@link EtcdReader}:
 * what it asks etcd for, when, and what its listeners see. The real-etcd ITs cover the jetcd
 * adapter under the same engine.
 */
class PrefixWatcherTest {

  private static final String P = "/services/greeter/";
  private static final ServiceInstance A = ServiceInstance.of("greeter", "10.0.0.1:1", 2);
  private static final ServiceInstance B = ServiceInstance.of("greeter", "10.0.0.2:1", 1);

  /** Backoff without jitter (factor exactly 1): retries wait 200 ms, 400 ms, 800 ms, ... */
  private static final Random NO_JITTER = new Random() {
    @Override
    public double nextDouble() {
      return 0.5;
    }
  };

  /** Hands out one reader at a time; renew replaces it as the registry does, minus its rate limit. */
  private static final class Clients implements ClientSource {
    final List<ScriptedEtcdReader> readers = new ArrayList<>(List.of(new ScriptedEtcdReader("client-1")));
    final List<EtcdReader> renewed = new ArrayList<>();

    ScriptedEtcdReader current() {
      return readers.get(readers.size() - 1);
    }

    @Override
    public EtcdReader reader() {
      return current();
    }

    @Override
    public void renew(EtcdReader failed) {
      renewed.add(failed);
      if (failed == current()) {
        readers.add(new ScriptedEtcdReader("client-" + (readers.size() + 1)));
      }
    }

    int listsAsked() {
      return readers.stream().mapToInt(r -> r.lists.size()).sum();
    }

    int watchesOpened() {
      return readers.stream().mapToInt(r -> r.watches.size()).sum();
    }

    int keysAtsAsked() {
      return readers.stream().mapToInt(r -> r.keysAts.size()).sum();
    }
  }

  private final InlineFakeScheduler scheduler = new InlineFakeScheduler();
  private final WatchStats stats = new WatchStats();
  private final Clients clients = new Clients();
  private final List<Snapshot> snapshots = new ArrayList<>();
  private final List<Throwable> unavailable = new ArrayList<>();
  private final PrefixWatcher watcher = new PrefixWatcher(
      clients, "http://etcd:2379", KeyLayout.defaults(), "greeter",
      WatcherConfig.DEFAULTS.withDebounce(Duration.ZERO), scheduler, NO_JITTER, stats);

  @BeforeEach
  void subscribe() {
    watcher.addListener(new WatchListener() {
      @Override
      public void onSnapshot(Snapshot snapshot) {
        snapshots.add(snapshot);
      }

      @Override
      public void onUnavailable(Throwable cause) {
        unavailable.add(cause);
      }
    });
  }

  private void forwardMillis(long millis) {
    scheduler.forward(millis, TimeUnit.MILLISECONDS);
  }

  private Snapshot last() {
    assertThat(snapshots).isNotEmpty();
    return snapshots.get(snapshots.size() - 1);
  }

  /** Starts the watcher and answers its listing with A at revision 10; returns the new watch. */
  private ScriptedWatch startListedAndWatching() {
    watcher.start();
    clients.current().pendingList().complete(listing(10, kv(P + "a", "10.0.0.1:1|2", 7)));
    return clients.current().openWatch();
  }

  // ---------------------------------------------------------------- states, in order

  @Test
  void aWatchThatBreaksBacksOffThenResumesThroughTheHistoryCheck() {
    List<WatcherState> seen = new ArrayList<>();
    watcher.start();
    seen.add(watcher.state());
    clients.current().pendingList().complete(listing(10, kv(P + "a", "10.0.0.1:1|2", 7)));
    seen.add(watcher.state());
    ScriptedWatch w = clients.current().openWatch();
    w.confirm(1, 10);
    w.fail(new IOException("connection reset"));
    seen.add(watcher.state());
    forwardMillis(200);
    seen.add(watcher.state());
    clients.current().pendingKeysAt().answer().complete(keysAt(P + "a", 7));
    seen.add(watcher.state());
    watcher.close();
    seen.add(watcher.state());

    assertThat(seen).containsExactly(
        WatcherState.LISTING, WatcherState.WATCHING, WatcherState.BACKING_OFF,
        WatcherState.RESUMING, WatcherState.WATCHING, WatcherState.CLOSED);
  }

  @Test
  void aFailedListingBacksOffAndListsAgainWhenTheBackoffIsOver() {
    watcher.start();
    clients.current().pendingList().completeExceptionally(new IOException("connection refused"));
    assertThat(watcher.state()).isEqualTo(WatcherState.BACKING_OFF);
    forwardMillis(199);
    assertThat(watcher.state()).isEqualTo(WatcherState.BACKING_OFF);
    forwardMillis(1);
    assertThat(watcher.state()).isEqualTo(WatcherState.LISTING);
    clients.current().pendingList().complete(listing(10));
    assertThat(watcher.state()).isEqualTo(WatcherState.WATCHING);
  }

  @Test
  void theThirdFailedWatchInARowGoesFromBackingOffToListing() {
    ScriptedWatch w = startListedAndWatching();
    for (int i = 1; i < WatcherDefaults.RELIST_AFTER_WATCH_FAILURES; i++) {
      w.fail(new IOException("reset " + i));
      forwardMillis(200L << (i - 1));
      assertThat(watcher.state()).isEqualTo(WatcherState.RESUMING);
      clients.current().pendingKeysAt().answer().complete(keysAt(P + "a", 7));
      w = clients.current().openWatch();
    }
    w.fail(new IOException("reset 3"));
    assertThat(watcher.state()).isEqualTo(WatcherState.BACKING_OFF);
    forwardMillis(800);
    assertThat(watcher.state()).isEqualTo(WatcherState.LISTING);
  }

  @Test
  void aHistoryCheckThatFindsOtherKeysGoesFromResumingToListing() {
    ScriptedWatch w = startListedAndWatching();
    w.confirm(1, 10);
    breakAndAwaitTheCheck(w).complete(keysAt(P + "b", 9));
    assertThat(watcher.state()).isEqualTo(WatcherState.LISTING);
  }

  @Test
  void compactionGoesFromWatchingStraightToListing() {
    ScriptedWatch w = startListedAndWatching();
    w.confirm(1, 10);
    w.compacted(15);
    assertThat(watcher.state()).isEqualTo(WatcherState.LISTING);
  }

  @Test
  void theWatchdogMovesAnUnconfirmedWatchToBackingOff() {
    startListedAndWatching();
    forwardMillis(TimeUnit.NANOSECONDS.toMillis(WatcherDefaults.LIST_TIMEOUT_NANOS));
    assertThat(watcher.state()).isEqualTo(WatcherState.BACKING_OFF);
  }

  @Test
  void closedIsFinalAndAnAnswerThatComesLaterChangesNothing() {
    watcher.start();
    CompletableFuture<EtcdReader.Listing> pending = clients.current().pendingList();
    watcher.close();
    pending.complete(listing(10, kv(P + "a", "10.0.0.1:1|2", 7)));
    forwardMillis(TimeUnit.MINUTES.toMillis(10));

    assertThat(watcher.state()).isEqualTo(WatcherState.CLOSED);
    assertThat(snapshots).isEmpty();
    assertThat(clients.watchesOpened()).isZero();
    assertThat(scheduler.pendingTasks()).isZero();
  }

  @Test
  void aLateErrorOfAWatchLeftBehindIsIgnored() {
    ScriptedWatch w = startListedAndWatching();
    w.confirm(1, 10);
    w.compacted(15); // left for a listing
    w.fail(new IOException("late"));
    assertThat(watcher.state()).isEqualTo(WatcherState.LISTING);
    assertThat(watcher.staleSinceMillis()).isZero();
  }

  @Test
  void listsThenWatchesFromTheListingsRevisionPlusOne() {
    ScriptedWatch w = startListedAndWatching();
    assertThat(snapshots).singleElement().satisfies(s -> {
      assertThat(s.instances()).containsExactly(A);
      assertThat(s.revision()).isEqualTo(10);
      assertThat(s.isStale()).isFalse();
    });
    assertThat(w.prefix).isEqualTo(P);
    assertThat(w.fromRevision).isEqualTo(11);
    assertThat(stats.openEtcdWatches()).isEqualTo(1);

    w.confirm(1, 10);
    w.events(12, put(P + "b", "10.0.0.2:1|1", 12));
    assertThat(last().instances()).containsExactly(A, B);
    assertThat(last().revision()).isEqualTo(12);
  }

  @Test
  void aBrokenWatchResumesFromTheLastAppliedRevisionAfterBackoff() {
    ScriptedWatch w = startListedAndWatching();
    w.confirm(1, 10);
    w.events(12, put(P + "b", "10.0.0.2:1|1", 12));
    w.progress(30); // nothing for us up to 30: no need to replay 13..30

    w.fail(new IOException("connection reset"));
    assertThat(w.cancelled).isTrue();
    assertThat(stats.openEtcdWatches()).isZero();
    forwardMillis(199);
    assertThat(clients.current().keysAts).isEmpty();
    forwardMillis(1);
    // First etcd shows it still holds our view at our revision, then the watch resumes.
    ScriptedEtcdReader.KeysAtRequest check = clients.current().pendingKeysAt();
    assertThat(check.prefix()).isEqualTo(P);
    assertThat(check.revision()).isEqualTo(30);
    assertThat(clients.watchesOpened()).isEqualTo(1);
    check.answer().complete(keysAt(P + "a", 7, P + "b", 12));
    assertThat(clients.current().openWatch().fromRevision).isEqualTo(31);
    assertThat(clients.listsAsked()).isEqualTo(1);
  }

  @Test
  void aResumeIntoAHistoryWithOtherKeysAtOurRevisionRelistsInsteadOfResuming() {
    ScriptedWatch w = startListedAndWatching(); // a|2 at 7, listed at 10
    w.confirm(1, 10);
    w.events(12, put(P + "b", "10.0.0.2:1|1", 12));

    // etcd restored from a snapshot before revision 12, whose own writes have since passed 12
    // on the same member and term: at revision 12 it holds c (its revision 11), not b.
    breakAndAwaitTheCheck(w).complete(keysAt(P + "a", 7, P + "c", 11));
    assertThat(clients.watchesOpened()).as("no watch resumed into the other history").isEqualTo(1);
    assertThat(clients.listsAsked()).isEqualTo(2);
    assertThat(watcher.counters().relists(RelistCause.RESTORED)).isEqualTo(1);
    clients.current().pendingList().complete(
        listing(14, kv(P + "a", "10.0.0.1:1|2", 7), kv(P + "c", "10.0.0.3:1|3", 11)));
    assertThat(last().instances()).extracting(ServiceInstance::address)
        .containsExactly("10.0.0.1:1", "10.0.0.3:1");
    assertThat(clients.current().openWatch().fromRevision).isEqualTo(15);
  }

  @Test
  void aResumeRelistsWhenEtcdsKeysAtOurRevisionDifferInModRevisionOrInNumber() {
    ScriptedWatch w = startListedAndWatching(); // a|2 at 7
    w.confirm(1, 10);
    breakAndAwaitTheCheck(w).complete(keysAt(P + "a", 9)); // a rewritten
    assertThat(clients.listsAsked()).isEqualTo(2);
    clients.current().pendingList().complete(listing(10, kv(P + "a", "10.0.0.1:1|2", 7)));
    ScriptedWatch second = clients.current().openWatch();
    second.confirm(1, 10);

    breakAndAwaitTheCheck(second).complete(keysAt(P + "a", 7, P + "b", 8)); // one more
    assertThat(clients.listsAsked()).isEqualTo(3);
    clients.current().pendingList().complete(listing(10, kv(P + "a", "10.0.0.1:1|2", 7)));
    ScriptedWatch third = clients.current().openWatch();
    third.confirm(1, 10);

    breakAndAwaitTheCheck(third).complete(keysAt()); // a gone
    assertThat(clients.listsAsked()).isEqualTo(4);
    assertThat(watcher.counters().relists(RelistCause.RESTORED)).isEqualTo(3);
  }

  @Test
  void aResumeAtARevisionEtcdHasNotReachedRelistsAsRestored() {
    ScriptedWatch w = startListedAndWatching();
    w.confirm(1, 10);
    breakAndAwaitTheCheck(w).complete(EtcdReader.KeysAt.notReached());
    assertThat(clients.watchesOpened()).isEqualTo(1);
    assertThat(clients.listsAsked()).isEqualTo(2);
    assertThat(watcher.counters().relists(RelistCause.RESTORED)).isEqualTo(1);
  }

  @Test
  void aResumeAtACompactedRevisionRelistsAsCompaction() {
    ScriptedWatch w = startListedAndWatching();
    w.confirm(1, 10);
    breakAndAwaitTheCheck(w).complete(EtcdReader.KeysAt.compacted());
    assertThat(clients.listsAsked()).isEqualTo(2);
    assertThat(watcher.counters().relists(RelistCause.COMPACTION)).isEqualTo(1);
    assertThat(watcher.counters().relists(RelistCause.COMPACTION)).isEqualTo(1);
  }

  @Test
  void aResumeCheckEtcdDoesNotAnswerIsAFailedAttemptLikeAFailedWatch() {
    ScriptedWatch w = startListedAndWatching();
    w.confirm(1, 10);
    breakAndAwaitTheCheck(w).completeExceptionally(new IOException("refused"));
    assertThat(last().isStale()).isTrue();
    assertThat(last().instances()).containsExactly(A);
    forwardMillis(399);
    assertThat(clients.keysAtsAsked()).isEqualTo(1);
    forwardMillis(1);
    assertThat(clients.renewed).as("two failures in a row, as with a watch").hasSize(1);
    clients.current().pendingKeysAt().answer().complete(keysAt(P + "a", 7));
    clients.current().openWatch().confirm(1, 10);
    assertThat(last().isStale()).isFalse();
    assertThat(clients.listsAsked()).isEqualTo(1);
  }

  @Test
  void compactionRelistsAtOnceDiffsAndWatchesFromTheNewRevision() {
    ScriptedWatch w = startListedAndWatching();
    w.confirm(1, 10);

    w.compacted(15);
    assertThat(w.cancelled).isTrue();
    assertThat(clients.listsAsked()).as("re-listed without waiting").isEqualTo(2);
    assertThat(watcher.counters().relists(RelistCause.COMPACTION)).isEqualTo(1);
    // Meanwhile a was deleted and b added: only a listing can tell.
    clients.current().pendingList().complete(listing(20, kv(P + "b", "10.0.0.2:1|1", 18)));
    assertThat(last().instances()).containsExactly(B);
    assertThat(last().revision()).isEqualTo(20);
    assertThat(clients.current().openWatch().fromRevision).isEqualTo(21);
    assertThat(snapshots).noneMatch(Snapshot::isStale); // falling behind is not an outage
  }

  @Test
  void aWatchConfirmedByAnEtcdBehindOurRevisionRelists() {
    ScriptedWatch w = startListedAndWatching();
    w.events(12, put(P + "b", "10.0.0.2:1|1", 12));

    // etcd restored from an older snapshot accepts a watch from a revision it has not reached
    // and stays silent: only its created notification shows it is behind.
    ScriptedWatch resumed = resumeAfterAReset(w, P + "a", 7, P + "b", 12);
    resumed.confirm(2, 5);
    assertThat(resumed.cancelled).isTrue();
    assertThat(clients.listsAsked()).as("re-listed at once").isEqualTo(2);
    clients.current().pendingList().complete(listing(6, kv(P + "a", "10.0.0.1:1|2", 3)));
    assertThat(last().instances()).containsExactly(A);
    assertThat(clients.current().openWatch().fromRevision).isEqualTo(7);
  }

  @Test
  void aWatchConfirmedFromAnOlderRaftTermRelistsAndTheNewTermIsTrustedAfterwards() {
    ScriptedWatch w = startListedAndWatching();
    w.confirm(1, 10, 8);

    ScriptedWatch resumed = resumeAfterAReset(w, P + "a", 7);
    resumed.confirm(1, 11, 2); // revision ahead, term behind: a restored cluster counts anew
    assertThat(clients.listsAsked()).isEqualTo(2);
    clients.current().pendingList().complete(listing(11, kv(P + "a", "10.0.0.1:1|2", 7)));
    ScriptedWatch next = clients.current().openWatch();
    next.confirm(1, 11, 2);
    assertThat(next.cancelled).as("the restored cluster's term is now the reference").isFalse();
    assertThat(clients.listsAsked()).isEqualTo(2);
  }

  @Test
  void aProxysMadeUpCreatedNotificationWithoutMemberOrTermIsNotTakenForARestore() {
    ScriptedWatch w = startListedAndWatching();
    w.confirm(1, 10, 8);

    // etcd's gRPC proxy joining a watch it already holds confirms it with only a revision.
    ScriptedWatch resumed = resumeAfterAReset(w, P + "a", 7);
    resumed.confirm(0, 11, 0);
    assertThat(resumed.cancelled).isFalse();
    assertThat(clients.listsAsked()).isEqualTo(1);
    resumed.events(12, put(P + "b", "10.0.0.2:1|1", 12));
    assertThat(last().instances()).containsExactly(A, B);
  }

  @Test
  void eventsAtOrBelowTheAppliedRevisionAreSkippedNotAppliedBackwards() {
    ScriptedWatch w = startListedAndWatching(); // a|2 at revision 7, listed at 10
    w.confirm(1, 10);
    // A coalesced watch through the proxy may replay older events: a's weight 5 at revision 6.
    w.events(12, put(P + "a", "10.0.0.1:1|5", 6), put(P + "b", "10.0.0.2:1|1", 12),
        put(P + "c", "10.0.0.3:1|1", 12)); // two keys of one transaction share a revision
    assertThat(last().instances()).extracting(ServiceInstance::address, ServiceInstance::weight)
        .containsExactly(tuple("10.0.0.1:1", 2), tuple("10.0.0.2:1", 1), tuple("10.0.0.3:1", 1));
    assertThat(watcher.counters().staleEventsSkipped()).isEqualTo(1);
    w.events(12, put(P + "b", "10.0.0.2:1|9", 12)); // the same revision again: already applied
    assertThat(last().instances()).extracting(ServiceInstance::weight).containsExactly(2, 1, 1);
    assertThat(watcher.counters().staleEventsSkipped()).isEqualTo(2);
  }

  /**
   * Breaks {@code w} and returns the watch opened after the first backoff step, once etcd showed
   * {@code view} (key, mod revision, ...) at the watcher's revision.
   */
  private ScriptedWatch resumeAfterAReset(ScriptedWatch w, Object... view) {
    breakAndAwaitTheCheck(w).complete(keysAt(view));
    return clients.current().openWatch();
  }

  /**
   * Breaks {@code w}, waits the first backoff step, and returns the answer to the check the
   * watcher then makes before resuming.
   */
  private CompletableFuture<EtcdReader.KeysAt> breakAndAwaitTheCheck(ScriptedWatch w) {
    w.fail(new IOException("connection reset"));
    forwardMillis(200);
    return clients.current().pendingKeysAt().answer();
  }

  @Test
  void afterThreeFailedWatchAttemptsInARowItRelistsInsteadOfResuming() {
    ScriptedWatch w = startListedAndWatching();
    w.fail(new IOException("etcdserver: mvcc: required revision is a future revision"));
    forwardMillis(200);
    clients.current().pendingKeysAt().answer().complete(keysAt(P + "a", 7));
    clients.current().openWatch().fail(new IOException("future revision"));
    forwardMillis(400);
    clients.current().pendingKeysAt().answer().complete(keysAt(P + "a", 7));
    ScriptedWatch third = clients.current().openWatch();
    assertThat(third.fromRevision).isEqualTo(11);
    assertThat(clients.listsAsked()).isEqualTo(1);

    third.fail(new IOException("future revision"));
    assertThat(WatcherDefaults.RELIST_AFTER_WATCH_FAILURES).isEqualTo(3);
    forwardMillis(800);
    assertThat(clients.listsAsked()).isEqualTo(2);
    assertThat(clients.watchesOpened()).isEqualTo(3);
    clients.current().pendingList().complete(listing(40, kv(P + "a", "10.0.0.1:1|2", 7)));
    assertThat(clients.current().openWatch().fromRevision).isEqualTo(41);
    assertThat(last().isStale()).isFalse();
  }

  @Test
  void aWatchEtcdDoesNotConfirmWithinTheListTimeoutCountsAsFailed() {
    ScriptedWatch w = startListedAndWatching();
    forwardMillis(TimeUnit.NANOSECONDS.toMillis(WatcherDefaults.LIST_TIMEOUT_NANOS) - 1);
    assertThat(w.cancelled).isFalse();
    assertThat(last().isStale()).isFalse();

    forwardMillis(1);
    assertThat(w.cancelled).isTrue();
    assertThat(last().isStale()).isTrue();
    assertThat(last().instances()).containsExactly(A); // stale, never empty

    forwardMillis(200);
    clients.current().pendingKeysAt().answer().complete(keysAt(P + "a", 7));
    ScriptedWatch resumed = clients.current().openWatch();
    resumed.confirm(1, 10);
    assertThat(last().isStale()).isFalse();
    forwardMillis(TimeUnit.MINUTES.toMillis(1));
    assertThat(resumed.cancelled).as("a confirmed watch is left alone").isFalse();
  }

  @Test
  void staleAndRecoveredArePublishedOnceEachAndStampedByTheInjectedClock() {
    scheduler.forward(1_000, TimeUnit.SECONDS);
    ScriptedWatch w = startListedAndWatching();
    w.confirm(1, 10);

    w.fail(new IOException("connection refused"));
    assertThat(snapshots).hasSize(2);
    assertThat(last().isStale()).isTrue();
    assertThat(last().staleSince()).contains(Instant.ofEpochSecond(1_000));
    assertThat(watcher.staleSinceMillis()).isEqualTo(1_000_000);
    assertThat(stats.staleWatches()).isEqualTo(1);

    forwardMillis(200);
    clients.current().pendingKeysAt().answer().complete(keysAt(P + "a", 7));
    clients.current().openWatch().fail(new IOException("connection refused"));
    assertThat(snapshots).as("still stale: nothing new to say").hasSize(2);
    assertThat(watcher.staleSinceMillis()).as("stale since the first failure").isEqualTo(1_000_000);

    forwardMillis(400);
    clients.current().pendingKeysAt().answer().complete(keysAt(P + "a", 7));
    clients.current().openWatch().confirm(2, 10);
    assertThat(snapshots).hasSize(3);
    assertThat(last().isStale()).isFalse();
    assertThat(last().instances()).containsExactly(A);
    assertThat(watcher.staleSinceMillis()).isZero();
    assertThat(stats.staleWatches()).isZero();
    assertThat(unavailable).as("a watcher that has a list never reports unavailable").isEmpty();
  }

  @Test
  void theClientIsRenewedAfterTwoConsecutiveFailuresAndTheNextAttemptUsesTheNewOne() {
    watcher.start();
    ScriptedEtcdReader first = clients.current();
    first.pendingList().completeExceptionally(new IOException("connection refused"));
    assertThat(clients.renewed).isEmpty();
    assertThat(unavailable).hasSize(1);

    forwardMillis(200);
    first.pendingList().completeExceptionally(new IOException("connection refused"));
    assertThat(WatcherDefaults.RENEW_CLIENT_AFTER_FAILURES).isEqualTo(2);
    assertThat(clients.renewed).containsExactly(first);

    forwardMillis(400);
    ScriptedEtcdReader second = clients.current();
    assertThat(second).isNotSameAs(first);
    second.pendingList().complete(listing(10, kv(P + "a", "10.0.0.1:1|2", 7)));
    assertThat(last().instances()).containsExactly(A);
    assertThat(second.openWatch().fromRevision).isEqualTo(11);
    assertThat(clients.renewed).hasSize(1);
  }

  @Test
  void aRefusedListingIsNamedAtOnceAndRetriedOnlyAtTheCappedDelayOnTheSameClient() {
    watcher.start();
    ScriptedEtcdReader reader = clients.current();
    reader.pendingList().completeExceptionally(
        Status.PERMISSION_DENIED.withDescription("etcdserver: permission denied").asRuntimeException());
    assertThat(unavailable).singleElement().isInstanceOfSatisfying(RegistryException.class, e -> {
      assertThat(e.kind()).isEqualTo(RegistryException.Kind.PERMISSION_DENIED);
      assertThat(e.getMessage()).startsWith("etcd refused list greeter: permission denied");
    });

    // Not retried as if etcd were away: nothing before the capped delay, and no new client.
    forwardMillis(ServiceWatcher.DEFAULT_BACKOFF_MAX_MILLIS - 1);
    assertThat(reader.lists).hasSize(1);
    forwardMillis(1);
    reader.pendingList().completeExceptionally(
        Status.PERMISSION_DENIED.withDescription("etcdserver: permission denied").asRuntimeException());
    forwardMillis(ServiceWatcher.DEFAULT_BACKOFF_MAX_MILLIS);
    assertThat(reader.lists).hasSize(3);
    assertThat(clients.renewed).isEmpty();
    assertThat(unavailable).hasSize(2);
  }

  @Test
  void aListingOverTheMessageSizeLimitIsALimitNotUnreachability() {
    watcher.start();
    clients.current().pendingList().completeExceptionally(
        Status.RESOURCE_EXHAUSTED
            .withDescription("gRPC message exceeds maximum size 4194304: 9437246")
            .asRuntimeException());
    assertThat(unavailable).singleElement().isInstanceOfSatisfying(RegistryException.class, e -> {
      assertThat(e.kind()).isEqualTo(RegistryException.Kind.LIMIT);
      assertThat(e.getMessage())
          .startsWith("etcd refused list greeter: over a size or quota limit")
          .contains("4194304");
    });
  }

  @Test
  void aWatchRefusedAfterTheListingKeepsServingStaleWithoutRenewingTheClient() {
    ScriptedWatch w = startListedAndWatching();
    w.confirm(1, 10);
    w.fail(Status.UNAUTHENTICATED.withDescription("etcdserver: invalid auth token").asRuntimeException());
    assertThat(last().isStale()).isTrue();
    assertThat(last().instances()).containsExactly(A);
    forwardMillis(ServiceWatcher.DEFAULT_BACKOFF_MAX_MILLIS);
    clients.current().pendingKeysAt().answer().completeExceptionally(
        Status.UNAUTHENTICATED.withDescription("etcdserver: invalid auth token").asRuntimeException());
    assertThat(clients.renewed).isEmpty();
    assertThat(unavailable).isEmpty();
  }

  @Test
  void aWatchTheClientEndsWithoutAnErrorEndsInARelist() {
    ScriptedWatch w = startListedAndWatching();
    w.confirm(1, 10);
    w.complete();
    assertThat(w.cancelled).isTrue();
    forwardMillis(200);
    assertThat(clients.listsAsked()).isEqualTo(2);
  }

  @Test
  void callbacksOfAnAbandonedWatchAreIgnored() {
    ScriptedWatch w = startListedAndWatching();
    w.fail(new IOException("connection reset"));
    w.events(12, put(P + "b", "10.0.0.2:1|1", 12)); // the old stream, late
    w.compacted(15);
    assertThat(snapshots).allSatisfy(s -> assertThat(s.instances()).containsExactly(A));
    assertThat(watcher.counters().relists(RelistCause.COMPACTION)).isZero();
    forwardMillis(200);
    clients.current().pendingKeysAt().answer().complete(keysAt(P + "a", 7));
    assertThat(clients.current().openWatch().fromRevision).isEqualTo(11);
  }

  @Test
  void theSafetyNetRelistRunsEveryRelistInterval() {
    ScriptedWatch w = startListedAndWatching();
    w.confirm(1, 10);
    scheduler.forward(ServiceWatcher.DEFAULT_RELIST_INTERVAL_MINUTES, TimeUnit.MINUTES);
    assertThat(clients.listsAsked()).isEqualTo(2);
    assertThat(w.cancelled).isTrue();
    clients.current().pendingList().complete(listing(50, kv(P + "a", "10.0.0.1:1|2", 7)));
    assertThat(snapshots).as("nothing changed: nothing published").hasSize(1);
    assertThat(clients.current().openWatch().fromRevision).isEqualTo(51);
  }

  @Test
  void aMalformedKeyAppearingOrGoingIsPublishedWithTheSameInstances() {
    ScriptedWatch w = startListedAndWatching();
    w.confirm(1, 10);
    w.events(11, put(P + "bad", "10.0.0.3:1|x", 11));
    assertThat(snapshots).hasSize(2);
    assertThat(last().instances()).containsExactly(A);
    assertThat(last().malformed()).extracting(Snapshot.MalformedKey::key).containsExactly(P + "bad");
    assertThat(watcher.counters().malformedCount()).isEqualTo(1);
    assertThat(stats.malformedValues()).isEqualTo(1);

    w.events(12, EtcdReader.Event.delete(P + "bad", 12));
    assertThat(snapshots).hasSize(3);
    assertThat(last().malformed()).isEmpty();
  }

  @Test
  void closeCancelsTheWatchEveryTimerAndTheStaleCount() {
    ScriptedWatch w = startListedAndWatching();
    w.fail(new IOException("connection refused"));
    assertThat(stats.staleWatches()).isEqualTo(1);
    watcher.close();
    assertThat(stats.staleWatches()).isZero();
    assertThat(stats.openEtcdWatches()).isZero();
    assertThat(scheduler.pendingTasks()).isZero();
    forwardMillis(TimeUnit.MINUTES.toMillis(10));
    assertThat(clients.watchesOpened()).isEqualTo(1);
    assertThat(clients.listsAsked()).isEqualTo(1);
  }
}
