package io.steelyard.discovery;

import static com.google.common.base.Preconditions.checkState;

import io.steelyard.discovery.EtcdReader.Event;
import io.steelyard.discovery.EtcdReader.Listing;
import io.steelyard.discovery.EtcdReader.WatchBatch;
import io.steelyard.registry.KeyLayout;
import java.time.Instant;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Function;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

/**
 * Keeps one service prefix in sync with etcd: list, then watch from the listing's revision + 1;
 * resume a broken watch from the last applied revision + 1 once etcd shows it still holds our
 * view there ({@link HistoryCheck}); re-list on compaction, when etcd went back in time, after
 * {@value WatcherDefaults#RELIST_AFTER_WATCH_FAILURES} failed watches in a row, on a watch that
 * jetcd closed for good, and periodically; publish coalesced snapshots ({@link Coalescer}) to its
 * listeners ({@link SnapshotFanOut}). Failures, their retry and staleness are {@link Staleness}'s.
 *
 * <p>Its life is a {@link WatcherState}, drawn there; every change goes through {@link #moveTo},
 * which ends what the state left behind (a watch, a pending retry) and starts a new attempt:
 * callbacks of an older attempt are ignored. It talks to etcd only through an {@link EtcdReader}
 * (jetcd, or a scripted fake in unit tests), taken afresh from its {@link ClientSource} each time.
 *
 * <p>Threading: the reader's callbacks (on gRPC/Vert.x event loops, jetcd's watch retry thread)
 * only enqueue onto {@link #scheduler}, a serialized executor; every field is touched only from
 * there, except the volatile ones (read by stats) and the listeners (copy-on-write).
 *
 * <p>jetcd 0.8.6 quirks this class is built around: a watch is closed for good after a
 * compaction and after most errors other than UNAVAILABLE; on UNAVAILABLE jetcd resumes by itself
 * every 500 ms without backoff and without telling anyone; and while etcd is down a new watch
 * neither fails nor confirms, it waits. We therefore end the watch on every error and own the
 * retry: backoff, resume from our own revision, a watchdog on the watch's confirmation ({@link
 * WatchStream}), and a clear stale/recovered signal.
 */
final class PrefixWatcher {

  private static final Logger logger = LoggerFactory.getLogger(PrefixWatcher.class);

  private final ClientSource clients;
  private final String service;
  private final String endpoints;
  private final String prefix;
  private final WatcherConfig config;
  private final Scheduler scheduler;
  private final InstanceTable table;
  private final Coalescer coalescer;
  private final WatchStats stats;
  private final Staleness staleness;
  private final HistoryCheck history;
  private final SnapshotFanOut fanOut;
  private final WatcherCounters counters = new WatcherCounters();

  private volatile WatcherState state = WatcherState.LISTING;
  private int attempt; // bumped by every transition: callbacks of an older attempt are ignored
  private long revision; // last revision fully applied; the watch resumes at revision + 1
  @Nullable private WatchStream stream; // while WATCHING
  @Nullable private EtcdReader lastReader; // the reader of the current or last attempt
  @Nullable private Future<?> retry; // while BACKING_OFF
  @Nullable private Future<?> periodicRelist;
  private volatile long memberId; // etcd member that answered last, for tests and debugging

  PrefixWatcher(
      ClientSource clients, String endpoints, KeyLayout layout, String service,
      WatcherConfig config, Scheduler scheduler, Random random, WatchStats stats) {
    this.clients = clients;
    this.service = service;
    this.endpoints = endpoints;
    this.prefix = layout.servicePrefix(service);
    this.config = config;
    this.scheduler = scheduler;
    this.stats = stats;
    this.staleness = new Staleness(service, endpoints, config, scheduler, random, stats);
    this.history = new HistoryCheck(service, endpoints);
    this.fanOut = new SnapshotFanOut(service, counters);
    this.table = new InstanceTable(service, layout, endpoints, () -> {
      counters.malformed();
      stats.malformedValues.incrementAndGet();
    });
    this.coalescer = new Coalescer(scheduler, config.debounceNanos(), this::publish);
  }

  String service() {
    return service;
  }

  /** The current state; any thread (for tests and debugging). */
  WatcherState state() {
    return state;
  }

  /** This watcher's counters for metrics. Any thread. */
  WatcherCounters counters() {
    return counters;
  }

  /** Seconds since etcd was lost, by this watcher's clock; 0 when fresh. Any thread. */
  double staleSeconds() {
    return staleness.staleSeconds();
  }

  /** A balancer now holds {@code snapshot}: records the delay since its change came. Any thread. */
  void propagated(Snapshot snapshot) {
    counters.propagated(snapshot, scheduler.nanoTime());
  }

  /** Milliseconds since epoch when etcd was lost, 0 when fresh. Any thread. */
  long staleSinceMillis() {
    return staleness.staleSinceMillis();
  }

  /** The etcd member that sent the last watch response (0 before the first). Any thread. */
  long memberId() {
    return memberId;
  }

  void start() {
    scheduler.execute(this::list);
  }

  /** Adds a listener and hands it the current view (or the current error) on the executor. */
  void addListener(WatchListener listener) {
    fanOut.add(listener);
    scheduler.execute(() -> {
      if (state != WatcherState.CLOSED) {
        fanOut.greet(listener, staleness.lastError());
      }
    });
  }

  void removeListener(WatchListener listener) {
    fanOut.remove(listener);
  }

  void close() {
    scheduler.execute(() -> {
      if (state == WatcherState.CLOSED) {
        return;
      }
      moveTo(WatcherState.CLOSED);
      logger.debug("Stopped watching service {} at {}", service, endpoints);
    });
  }

  /**
   * Moves to {@code next} as {@link WatcherState} draws it, abandoning the attempt of the state
   * left (its watch closed, a retry cancelled, late callbacks ignored); returns the new attempt.
   */
  private int moveTo(WatcherState next) {
    checkState(state.canMoveTo(next), "watcher of %s: %s -> %s", service, state, next);
    logger.debug("Watcher of service {}: {} -> {}", service, state, next);
    state = next;
    cancel(retry);
    retry = null;
    closeWatch();
    if (next == WatcherState.CLOSED) {
      coalescer.cancel();
      cancel(periodicRelist);
      staleness.close();
    }
    return ++attempt;
  }

  /** Whether a callback of attempt {@code a} still counts: nothing moved since it started. */
  private boolean current(int a) {
    return a == attempt && state != WatcherState.CLOSED;
  }

  // ---------------------------------------------------------------- listing

  /** Lists again after the first listing, counting why. */
  private void relist(RelistCause cause) {
    counters.relisted(cause);
    list();
  }

  private void list() {
    if (state == WatcherState.CLOSED) {
      return;
    }
    int a = moveTo(WatcherState.LISTING);
    long startNanos = scheduler.nanoTime();
    ask(reader -> reader.list(prefix), (listing, err) -> onListed(a, startNanos, listing, err));
  }

  private void onListed(int a, long startNanos, @Nullable Listing listing, @Nullable Throwable err) {
    if (!current(a)) {
      return;
    }
    if (err != null) {
      failed("list", err, () -> relist(RelistCause.LIST_FAILED));
      return;
    }
    long fetchedNanos = scheduler.nanoTime();
    table.replaceAll(listing.keys());
    revision = listing.revision();
    staleness.answered();
    long now = scheduler.nanoTime();
    logger.atLevel(fanOut.published() == null ? Level.INFO : Level.DEBUG).log(
        "Listed service {} at {}: {} keys at revision {} in {} ms ({} ms to decode)", service, endpoints,
        table.size(), revision, (now - startNanos) / 1_000_000, (now - fetchedNanos) / 1_000_000);
    staleness.recovered(revision);
    coalescer.flush(); // a listing is a complete view: publish it now, whatever the debounce
    schedulePeriodicRelist();
    watch();
  }

  private void schedulePeriodicRelist() {
    cancel(periodicRelist);
    periodicRelist = scheduler.schedule(() -> {
      if (state != WatcherState.CLOSED && state != WatcherState.BACKING_OFF) {
        relist(RelistCause.PERIODIC);
      }
    }, config.relistIntervalNanos(), TimeUnit.NANOSECONDS);
  }

  // ---------------------------------------------------------------- watching

  private void watch() {
    int a = moveTo(WatcherState.WATCHING);
    WatchStream opened;
    try {
      opened = WatchStream.open(
          lastReader = clients.reader(), prefix, revision + 1, scheduler, config.listTimeoutNanos(),
          stats, () -> current(a), new OnWatch());
    } catch (RuntimeException e) { // a closed client throws synchronously
      new OnWatch().onError(e);
      return;
    }
    if (!current(a)) {
      opened.close(); // it already ended while being opened
      return;
    }
    stream = opened;
  }

  /** What the current watch reports, on the scheduler (a watch left behind reports nothing). */
  private final class OnWatch implements WatchStream.Handler {
    @Override
    public void onBatch(WatchBatch batch, long receivedNanos) {
      if (batch.created() && history.wentBackInTime(batch, revision)) {
        relist(RelistCause.RESTORED);
        return;
      }
      history.saw(batch);
      if (batch.memberId() != 0) { // 0: a created notification a gRPC proxy made up
        memberId = batch.memberId();
      }
      if (staleness.recovered(revision)) {
        coalescer.changed(); // any response, created notification included, proves it is back
      }
      boolean changed = table.apply(batch.events(), revision, counters::staleEventSkipped);
      for (Event event : batch.events()) {
        revision = Math.max(revision, event.kv().modRevision());
      }
      if (batch.events().isEmpty() && batch.progressNotify()) {
        revision = Math.max(revision, batch.revision());
      }
      staleness.answered();
      if (changed) {
        fanOut.changeArrived(receivedNanos);
        coalescer.changed(); // all events of this response are applied: one publish at most
      }
    }

    @Override
    public void onCompacted(long compactedRevision) {
      // Events after our revision are gone: only a fresh listing is trustworthy.
      logger.info(
          "Watch of service {} at {} fell behind compaction (compacted revision {}, ours {});"
              + " re-listing", service, endpoints, compactedRevision, revision);
      relist(RelistCause.COMPACTION);
    }

    @Override
    public void onError(Throwable err) {
      // Resume, or re-list after a few failures in a row: an error we do not recognise must not
      // trap the watcher in resuming forever.
      failed("watch", err, PrefixWatcher.this::resumeOrRelist);
    }

    @Override
    public void onCompleted() {
      // The watch ended for good without an error we saw: re-list to be sure of the state.
      failed("watch", new IllegalStateException("watch closed by etcd client"),
          () -> relist(RelistCause.WATCH_CLOSED));
    }
  }

  // ---------------------------------------------------------------- resuming

  private void resumeOrRelist() {
    if (staleness.failures() >= WatcherDefaults.RELIST_AFTER_WATCH_FAILURES) {
      relist(RelistCause.WATCH_FAILURES);
    } else {
      resume();
    }
  }

  /** Checks etcd's history at our revision ({@link HistoryCheck#resumable}), then resumes. */
  private void resume() {
    int a = moveTo(WatcherState.RESUMING);
    long at = revision;
    ask(reader -> reader.keysAt(prefix, at), (keys, err) -> onResumeChecked(a, at, keys, err));
  }

  private void onResumeChecked(
      int a, long at, @Nullable EtcdReader.KeysAt keys, @Nullable Throwable err) {
    if (!current(a)) {
      return;
    }
    if (err != null) {
      failed("watch", err, PrefixWatcher.this::resumeOrRelist);
      return;
    }
    RelistCause cause = history.resumable(keys, at, table);
    if (cause == null) {
      watch();
    } else {
      relist(cause);
    }
  }

  // ---------------------------------------------------------------- failure and publishing

  /**
   * A list, watch or check failed: back off as {@link Staleness} decides, renewing the client when
   * it says so; tell listeners that never had a view; then {@code retryAction}.
   */
  private void failed(String what, Throwable err, Runnable retryAction) {
    int a = moveTo(WatcherState.BACKING_OFF);
    boolean listed = fanOut.published() != null;
    Staleness.Failed f = staleness.failed(what, err, listed, fanOut.known(), revision);
    if (f.decision().renewClient() && lastReader != null) {
      clients.renew(lastReader);
    }
    if (f.turnedStale() && listed) {
      coalescer.flush(); // listeners learn about the staleness, instances unchanged
    }
    if (!listed) {
      fanOut.unavailable(f.decision().error());
    }
    retry = scheduler.schedule(() -> {
      if (current(a)) {
        retryAction.run();
      }
    }, f.decision().delayNanos(), TimeUnit.NANOSECONDS);
  }

  /**
   * Asks etcd through the current reader; the answer, or what a closed client throws at once,
   * comes back on the scheduler.
   */
  private <T> void ask(
      Function<EtcdReader, CompletableFuture<T>> call, BiConsumer<T, Throwable> answer) {
    try {
      EtcdReader reader = lastReader = clients.reader();
      call.apply(reader).whenComplete((r, err) -> scheduler.execute(() -> answer.accept(r, err)));
    } catch (RuntimeException e) { // a closed client throws synchronously
      answer.accept(null, e);
    }
  }

  private void publish() {
    if (state == WatcherState.CLOSED) {
      return;
    }
    long stale = staleness.staleSinceMillis();
    fanOut.publish(table.snapshot(revision, stale == 0 ? null : Instant.ofEpochMilli(stale)));
  }

  private void closeWatch() {
    if (stream != null) {
      stream.close();
      stream = null;
    }
  }

  private static void cancel(@Nullable Future<?> f) {
    if (f != null) {
      f.cancel(false);
    }
  }

  @Override
  public String toString() {
    return "PrefixWatcher{service=" + service + ", etcd=" + endpoints + ", prefix=" + prefix + "}";
  }
}
