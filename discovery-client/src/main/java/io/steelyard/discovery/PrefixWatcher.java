package io.steelyard.discovery;

import io.steelyard.discovery.EtcdReader.Event;
import io.steelyard.discovery.EtcdReader.Listing;
import io.steelyard.discovery.EtcdReader.WatchBatch;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.RegistryException.Kind;
import io.steelyard.registry.internal.Backoff;
import io.steelyard.registry.internal.EtcdErrors;
import java.time.Duration;
import java.time.Instant;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps one service prefix in sync with etcd: list, then watch from the listing's revision + 1;
 * resume a broken watch from the last seen revision + 1 once etcd shows it still holds our view
 * at that revision ({@link #resume()}); re-list on compaction, when etcd went back in time, on a
 * watch that jetcd closed for good, and periodically; publish coalesced snapshots to its
 * listeners.
 *
 * <p>It talks to etcd only through an {@link EtcdReader} (jetcd in production, a scripted fake in
 * unit tests), taken afresh from its {@link ClientSource} for every attempt.
 *
 * <p>Threading: the reader calls back on its own threads (for jetcd: gRPC/Vert.x event loops, its
 * watch retry thread). Those callbacks only enqueue onto {@link #scheduler}, a serialized
 * executor, and every field below is touched only from there — except {@link #staleSinceMillis}
 * (volatile, read by stats) and {@link #listeners} (copy-on-write, changed by the registry).
 *
 * <p>jetcd 0.8.6 quirks this class is built around: a watch is closed for good after a
 * compaction and after most errors other than UNAVAILABLE; on UNAVAILABLE jetcd resumes by itself
 * every 500 ms without backoff and without telling anyone; and while etcd is down a new watch
 * neither fails nor confirms, it waits. We therefore end the watch on every error and own the
 * retry: capped exponential backoff with jitter, resume from our own revision, a watchdog on the
 * watch's confirmation, and a clear stale/recovered signal.
 */
final class PrefixWatcher {

  private static final Logger logger = LoggerFactory.getLogger(PrefixWatcher.class);

  /** Each retry waits its backoff step ±25%, so a fleet of clients does not reconnect in step. */
  private static final double BACKOFF_JITTER = 0.25;

  /** Consecutive failed watch attempts after which we re-list rather than resume. */
  static final int RELIST_AFTER_WATCH_FAILURES = 3;

  /**
   * The shared etcd client of this watcher's connection, which may be replaced: after a long
   * outage the gRPC channel under jetcd backs its reconnects off towards two minutes and jetcd
   * exposes no {@code resetConnectBackoff()}, so a fresh client is the way to notice a
   * recovered etcd within seconds.
   */
  interface ClientSource {
    EtcdReader reader();

    /** {@code failed} keeps failing: replace it, unless that was done recently or already. */
    void renew(EtcdReader failed);
  }

  /** Consecutive failures after which the client is renewed (rate-limited by the source). */
  static final int RENEW_CLIENT_AFTER_FAILURES = 2;

  private final ClientSource clients;
  private final String service;
  private final String endpoints;
  private final String prefix;
  private final KeyLayout layout;
  private final WatcherConfig config;
  private final Scheduler scheduler;
  private final Backoff backoff;
  private final InstanceTable table;
  private final Coalescer coalescer;
  private final WatchStats stats;
  private final AtomicLong malformed = new AtomicLong();
  private final AtomicLong compactionRelists = new AtomicLong();
  private final WatcherCounters counters = new WatcherCounters();
  final CopyOnWriteArrayList<WatchListener> listeners = new CopyOnWriteArrayList<>();

  // Touched only from the scheduler.
  private long revision; // last revision fully applied; the watch resumes at revision + 1
  private long raftTerm; // highest raft term seen in a response header; see wentBackInTime
  private boolean listed; // a listing has completed at least once
  private int generation; // bumps whenever a list or watch attempt is abandoned
  @Nullable private EtcdReader.Watching watching;
  @Nullable private EtcdReader lastReader; // the reader of the current or last attempt
  @Nullable private Future<?> createWatchdog; // fails a watch that etcd has not confirmed
  private boolean watchCounted;
  @Nullable private Future<?> retry;
  @Nullable private Future<?> periodicRelist;
  private int failures;
  @Nullable private Kind lastFailureKind; // of the current stale period, for logging
  private long listStartNanos;
  @Nullable private Snapshot published;
  @Nullable private Throwable lastError;
  // when the oldest change not yet published arrived; Snapshot.NO_CHANGE when none
  private long changeReceivedNanos = Snapshot.NO_CHANGE;
  private boolean closed;
  private volatile long staleSinceMillis; // 0 = fresh
  private volatile long memberId; // etcd member that answered last, for tests and debugging

  PrefixWatcher(
      ClientSource clients,
      String endpoints,
      KeyLayout layout,
      String service,
      WatcherConfig config,
      Scheduler scheduler,
      Random random,
      WatchStats stats) {
    this.clients = clients;
    this.service = service;
    this.endpoints = endpoints;
    this.layout = layout;
    this.prefix = layout.servicePrefix(service);
    this.config = config;
    this.scheduler = scheduler;
    this.backoff =
        new Backoff(
            Duration.ofNanos(config.backoffInitialNanos()),
            Duration.ofNanos(config.backoffMaxNanos()),
            BACKOFF_JITTER,
            random);
    this.stats = stats;
    this.table = new InstanceTable(service, layout, endpoints, () -> {
      malformed.incrementAndGet();
      stats.malformedValues.incrementAndGet();
    });
    this.coalescer = new Coalescer(scheduler, config.debounceNanos(), this::publish);
  }

  String service() {
    return service;
  }

  /** How many times a compaction forced a re-list. Any thread. */
  long compactionRelists() {
    return compactionRelists.get();
  }

  /** Watch events at or below the applied revision, skipped (only a gRPC proxy sends them). Any thread. */
  long staleEventsSkipped() {
    return counters.staleEventsSkipped();
  }

  long malformedCount() {
    return malformed.get();
  }

  /** This watcher's counters for metrics. Any thread. */
  WatcherCounters counters() {
    return counters;
  }

  /** Seconds since etcd was lost, by this watcher's clock; 0 when fresh. Any thread. */
  double staleSeconds() {
    long since = staleSinceMillis;
    return since == 0 ? 0 : Math.max(0, scheduler.currentTimeMillis() - since) / 1000.0;
  }

  /**
   * A channel's balancer now holds {@code snapshot}: records the delay since its change arrived
   * from etcd, if it carries one. Any thread.
   */
  void propagated(Snapshot snapshot) {
    long received = snapshot.changeReceivedNanos();
    if (received != Snapshot.NO_CHANGE) {
      counters.propagated(Math.max(0, scheduler.nanoTime() - received));
    }
  }

  /** Milliseconds since epoch when etcd was lost, 0 when fresh. Any thread. */
  long staleSinceMillis() {
    return staleSinceMillis;
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
    listeners.add(listener);
    scheduler.execute(
        () -> {
          if (closed || !listeners.contains(listener)) {
            return;
          }
          if (published != null) {
            // Not news to a newcomer: no propagation delay to measure.
            deliver(listener, published.withChangeReceivedNanos(Snapshot.NO_CHANGE));
          } else if (lastError != null) {
            deliverError(listener, lastError);
          }
        });
  }

  void removeListener(WatchListener listener) {
    listeners.remove(listener);
  }

  void close() {
    scheduler.execute(
        () -> {
          if (closed) {
            return;
          }
          closed = true;
          generation++;
          coalescer.cancel();
          cancel(retry);
          cancel(periodicRelist);
          closeWatch();
          if (staleSinceMillis != 0) {
            staleSinceMillis = 0;
            stats.staleWatches.decrementAndGet();
          }
          logger.debug("Stopped watching service {} at {}", service, endpoints);
        });
  }

  // ---------------------------------------------------------------- listing

  /** Lists again after the first listing, counting why. */
  private void relist(RelistCause cause) {
    counters.relisted(cause);
    list();
  }

  private void list() {
    if (closed) {
      return;
    }
    cancel(retry);
    retry = null;
    closeWatch();
    int gen = ++generation;
    listStartNanos = scheduler.nanoTime();
    try {
      EtcdReader reader = lastReader = clients.reader();
      reader
          .list(prefix)
          .whenComplete((listing, err) -> scheduler.execute(() -> onListed(gen, listing, err)));
    } catch (RuntimeException e) { // a closed client throws synchronously
      onListed(gen, null, e);
    }
  }

  private void onListed(int gen, @Nullable Listing listing, @Nullable Throwable err) {
    if (closed || gen != generation) {
      return;
    }
    if (err != null) {
      failed("list", err, () -> relist(RelistCause.LIST_FAILED));
      return;
    }
    long fetchedNanos = scheduler.nanoTime();
    table.replaceAll(listing.keys());
    long listedAt = listing.revision();
    boolean first = !listed;
    revision = listedAt;
    listed = true;
    failures = 0;
    lastError = null;
    long now = scheduler.nanoTime();
    if (first) {
      logger.info(
          "Listed service {} at {}: {} keys at revision {} in {} ms ({} ms to decode)",
          service, endpoints, table.size(), listedAt,
          (now - listStartNanos) / 1_000_000, (now - fetchedNanos) / 1_000_000);
    } else {
      logger.debug("Re-listed service {}: {} keys at revision {} in {} ms",
          service, table.size(), listedAt, (now - listStartNanos) / 1_000_000);
    }
    recovered();
    // A listing is a complete view: publish it now, whatever the debounce.
    coalescer.flush();
    schedulePeriodicRelist();
    watch();
  }

  private void schedulePeriodicRelist() {
    cancel(periodicRelist);
    periodicRelist =
        scheduler.schedule(
            () -> {
              if (!closed && retry == null) {
                relist(RelistCause.PERIODIC);
              }
            },
            config.relistIntervalNanos(),
            TimeUnit.NANOSECONDS);
  }

  // ---------------------------------------------------------------- watching

  private void watch() {
    if (closed) {
      return;
    }
    retry = null;
    closeWatch();
    int gen = ++generation;
    // jetcd's watch stream waits for the connection instead of failing while etcd is down,
    // so silence is the only symptom: no confirmation in time counts as a failed attempt.
    createWatchdog =
        scheduler.schedule(
            () -> onWatchError(gen, new TimeoutException(
                "etcd did not confirm the watch within "
                    + TimeUnit.NANOSECONDS.toMillis(config.listTimeoutNanos()) + " ms")),
            config.listTimeoutNanos(),
            TimeUnit.NANOSECONDS);
    EtcdReader.Watching opened;
    try {
      EtcdReader reader = lastReader = clients.reader();
      opened = reader.watch(prefix, revision + 1, new EtcdReader.WatchCallbacks() {
        @Override
        public void onBatch(WatchBatch batch) {
          long receivedNanos = scheduler.nanoTime(); // before the hop: queueing counts too
          scheduler.execute(() -> onWatchBatch(gen, batch, receivedNanos));
        }

        @Override
        public void onCompacted(long compactedRevision) {
          scheduler.execute(() -> onWatchCompacted(gen, compactedRevision));
        }

        @Override
        public void onError(Throwable error) {
          scheduler.execute(() -> onWatchError(gen, error));
        }

        @Override
        public void onCompleted() {
          scheduler.execute(() -> onWatchCompleted(gen));
        }
      });
    } catch (RuntimeException e) { // a closed client throws synchronously
      onWatchError(gen, e);
      return;
    }
    if (closed || gen != generation) {
      opened.cancel(); // it already ended while being opened
      return;
    }
    watching = opened;
    watchCounted = true;
    stats.openEtcdWatches.incrementAndGet();
  }

  private void onWatchBatch(int gen, WatchBatch batch, long receivedNanos) {
    if (closed || gen != generation) {
      return;
    }
    if (batch.created() && wentBackInTime(batch)) {
      generation++;
      closeWatch();
      relist(RelistCause.RESTORED);
      return;
    }
    raftTerm = Math.max(raftTerm, batch.raftTerm());
    if (batch.memberId() != 0) { // 0: a created notification a gRPC proxy made up (wentBackInTime)
      memberId = batch.memberId();
    }
    cancel(createWatchdog);
    createWatchdog = null;
    if (staleSinceMillis != 0) {
      recovered(); // any response, created notification included, proves the stream is back
    }
    boolean changed = false;
    long applied = revision;
    for (Event event : batch.events()) {
      EtcdReader.KeyVersion kv = event.kv();
      if (kv.modRevision() <= applied) {
        // Already in our view. etcd never sends these, but its gRPC proxy may: a watch it
        // coalesces into a shared one can start from an older revision (etcd's grpc_proxy docs,
        // "Limitations"); applying such an event would move a key back in time.
        counters.staleEventSkipped();
        continue;
      }
      changed |= event.delete() ? table.remove(kv.key()) : table.put(kv.key(), kv.value(), kv.modRevision());
      revision = Math.max(revision, kv.modRevision());
    }
    if (batch.events().isEmpty() && batch.progressNotify()) {
      revision = Math.max(revision, batch.revision());
    }
    failures = 0;
    if (changed) {
      if (changeReceivedNanos == Snapshot.NO_CHANGE) {
        changeReceivedNanos = receivedNanos;
      }
      coalescer.changed(); // all events of this response are applied: one publish at most
    }
  }

  private void onWatchCompacted(int gen, long compactedRevision) {
    if (closed || gen != generation) {
      return;
    }
    generation++;
    closeWatch();
    // Events after our revision are gone: only a fresh listing is trustworthy.
    compactionRelists.incrementAndGet();
    logger.info(
        "Watch of service {} at {} fell behind compaction (compacted revision {}, ours {});"
            + " re-listing", service, endpoints, compactedRevision, revision);
    relist(RelistCause.COMPACTION);
  }

  /**
   * Whether etcd, confirming a watch, is behind what this watcher already applied: its current
   * revision below ours, or a raft term below one we saw. etcd accepts a watch from a revision it
   * has not reached and then waits silently until it gets there, so after a restore from an older
   * snapshot (etcd 3.4 restores the snapshot's revision) a resumed watch would skip every change
   * until then. A member that merely lags makes us re-list too, which is harmless: the listing is
   * a linearizable read.
   */
  private boolean wentBackInTime(WatchBatch batch) {
    long theirs = batch.revision();
    long term = batch.raftTerm();
    if (term == 0 && batch.memberId() == 0) {
      // etcd's gRPC proxy, adding this watch to a watch it already holds, makes up the created
      // notification with only a revision (ours + 1); no member or term to compare.
      return theirs < revision;
    }
    if (theirs >= revision && term >= raftTerm) {
      return false;
    }
    logger.warn(
        "etcd at {} is behind what service {} was watched at (revision {} < {} or raft term {} < {});"
            + " restored from a snapshot? Re-listing", endpoints, service, theirs, revision, term, raftTerm);
    raftTerm = term; // a restored cluster counts its terms afresh
    return true;
  }

  private void onWatchError(int gen, Throwable err) {
    if (closed || gen != generation) {
      return;
    }
    generation++; // whatever the old stream still delivers is ignored from now on
    closeWatch();
    // Resume from our revision once etcd shows it still holds our view (resume()); after a few
    // failures in a row re-list instead: an error we do not recognise must not trap the watcher
    // in resuming forever. (A restored etcd does not fail a watch opened on it at all:
    // wentBackInTime and resume()'s check catch that.)
    failed("watch", err, this::resumeOrRelist);
  }

  private void resumeOrRelist() {
    if (failures >= RELIST_AFTER_WATCH_FAILURES) {
      relist(RelistCause.WATCH_FAILURES);
    } else {
      resume();
    }
  }

  /**
   * Resumes a broken watch from our revision + 1, once etcd has shown that its history still
   * holds our view: the keys of the prefix at our revision, keys only, must be exactly ours, each
   * at the same mod revision. Otherwise (or when that revision is compacted, or etcd has not
   * reached it) re-list.
   *
   * <p>Why a check at all: etcd restored from an older snapshot takes up the snapshot's revision
   * and, in a single-member or same-configuration cluster, the same member id and often the same
   * raft term; once writes after the restore have carried its revision past ours, a resumed
   * watch is confirmed like any other ({@link #wentBackInTime} sees nothing) and replays a
   * different history from our revision + 1 onto a view etcd never held: keys written or deleted
   * between the snapshot and our revision stay wrong until the periodic re-list.
   *
   * <p>Why this check: resuming is right exactly when etcd's view of the prefix at our revision
   * equals ours, whatever happened elsewhere in the key space, since the watch replays everything
   * after it. A mod revision names one write, so when every key is there at our mod revision and
   * no other key is, the two histories made the same writes to this prefix, or differ only by a
   * write of the same key at the same revision with other bytes (the values are not compared, to
   * keep the check to keys; the periodic re-list bounds that case). A count or the newest key
   * alone (one range with a limit of 1) is cheaper but unsound: two histories that each deleted
   * one different key, or wrote other keys below the same newest one, pass it.
   *
   * <p>Cost: one range of the prefix's keys without values per resume, paged as a listing; a
   * watch that never breaks costs nothing more. A first watch after a listing needs no check.
   */
  private void resume() {
    if (closed) {
      return;
    }
    retry = null;
    closeWatch();
    int gen = ++generation;
    long at = revision;
    try {
      EtcdReader reader = lastReader = clients.reader();
      reader
          .keysAt(prefix, at)
          .whenComplete((keys, err) -> scheduler.execute(() -> onResumeChecked(gen, at, keys, err)));
    } catch (RuntimeException e) { // a closed client throws synchronously
      onResumeChecked(gen, at, null, e);
    }
  }

  private void onResumeChecked(
      int gen, long at, @Nullable EtcdReader.KeysAt keys, @Nullable Throwable err) {
    if (closed || gen != generation) {
      return;
    }
    if (err != null) {
      failed("watch", err, this::resumeOrRelist);
      return;
    }
    switch (keys.outcome()) {
      case LISTED -> {
        if (table.holdsExactly(keys.modRevisions())) {
          watch();
          return;
        }
        logger.warn(
            "etcd at {} holds other keys of service {} at revision {} than this watcher applied"
                + " ({} there, {} here); restored from a snapshot? Re-listing",
            endpoints, service, at, keys.modRevisions().size(), table.size());
        relist(RelistCause.RESTORED);
      }
      case NOT_REACHED -> {
        logger.warn(
            "etcd at {} has not reached revision {} that service {} was watched at; restored from"
                + " a snapshot? Re-listing", endpoints, at, service);
        relist(RelistCause.RESTORED);
      }
      case COMPACTED -> {
        compactionRelists.incrementAndGet();
        logger.info("Revision {} of service {} at {} was compacted while the watch was down;"
            + " re-listing", at, service, endpoints);
        relist(RelistCause.COMPACTION);
      }
    }
  }

  private void onWatchCompleted(int gen) {
    if (closed || gen != generation) {
      return; // we closed it ourselves
    }
    // The watch ended for good without an error we saw: re-list to be sure of the state.
    generation++;
    closeWatch();
    failed("watch", new IllegalStateException("watch closed by etcd client"),
        () -> relist(RelistCause.WATCH_CLOSED));
  }

  // ---------------------------------------------------------------- failure and staleness

  /**
   * A list or watch attempt failed: mark stale, tell listeners that never had a list, and retry.
   * The failure is classified once, by registry-core's etcd-call layer (by code, never by
   * message): when etcd could not be reached, back off exponentially and renew the client after
   * {@value #RENEW_CLIENT_AFTER_FAILURES} failures in a row; when etcd answered and refused
   * (permission, authentication, TLS, a size limit, an invalid request), say so, keep the client
   * — a new one would be refused alike — and retry only at the capped delay, until an operator
   * fixes it.
   */
  private void failed(String what, Throwable err, Runnable retryAction) {
    RegistryException e = EtcdErrors.toRegistryException(what + " " + service, err);
    Kind kind = e.kind();
    failures++;
    lastError = e;
    // A new client reads the certificate files again, so a TLS refusal renews it too (rotated
    // certificates are picked up without a restart); other refusals would only fail again.
    boolean renewable = !kind.refused() || kind == Kind.TLS;
    if (renewable && failures >= RENEW_CLIENT_AFTER_FAILURES && lastReader != null) {
      clients.renew(lastReader);
    }
    long delay = kind.refused() ? backoff.cappedDelayNanos() : backoff.delayNanos(failures - 1);
    boolean turnedStale = staleSinceMillis == 0;
    if (turnedStale) {
      staleSinceMillis = Math.max(1, scheduler.currentTimeMillis());
      stats.staleWatches.incrementAndGet();
    }
    if (turnedStale || kind != lastFailureKind) {
      logFailure(what, e);
    } else {
      logger.debug("Retry {} of service {} failed again ({} consecutive): {}",
          what, service, failures, e.getMessage());
    }
    lastFailureKind = kind;
    if (turnedStale && listed) {
      coalescer.flush(); // listeners learn about the staleness, instances unchanged
    }
    if (!listed) {
      for (WatchListener l : listeners) {
        deliverError(l, e);
      }
    }
    retry =
        scheduler.schedule(
            () -> {
              if (!closed) {
                retryAction.run();
              }
            },
            delay,
            TimeUnit.NANOSECONDS);
  }

  /** One WARN per stale period and per change of failure kind; the rest at DEBUG. */
  private void logFailure(String what, RegistryException e) {
    int known = published == null ? 0 : published.instances().size();
    if (!e.kind().refused()) {
      if (listed) {
        logger.warn("Lost etcd at {} while watching service {}: {}; serving the last known {}"
                + " instances of revision {} until it recovers",
            endpoints, service, e.getMessage(), known, revision, e.getCause());
      } else {
        logger.warn("Cannot reach etcd at {} to list service {}: {}; no instances known yet,"
            + " retrying", endpoints, service, e.getMessage(), e.getCause());
      }
      return;
    }
    String hint = e.kind() == Kind.LIMIT && what.equals("list")
        ? "; a listing is paged down to one key per etcd response, and a key with its value is"
            + " over the client's inbound message limit (gRPC's default: 4 MiB) or, through etcd's"
            + " gRPC proxy, its send limit (--max-send-bytes, default 1.5 MiB)"
        : "";
    long retrySeconds = TimeUnit.NANOSECONDS.toSeconds(config.backoffMaxNanos());
    if (listed) {
      logger.warn("etcd at {} refused the {} of service {}: {}{}; serving the last known {}"
              + " instances of revision {}, retrying every ~{} s",
          endpoints, what, service, e.getMessage(), hint, known, revision, retrySeconds, e.getCause());
    } else {
      logger.warn("etcd at {} refused the {} of service {}: {}{}; no instances known yet,"
              + " retrying every ~{} s",
          endpoints, what, service, e.getMessage(), hint, retrySeconds, e.getCause());
    }
  }

  private void recovered() {
    if (staleSinceMillis == 0) {
      return;
    }
    long since = staleSinceMillis;
    staleSinceMillis = 0;
    lastFailureKind = null;
    stats.staleWatches.decrementAndGet();
    logger.info(
        "etcd at {} reachable again for service {} after {} ms stale; at revision {}",
        endpoints, service, Math.max(0, scheduler.currentTimeMillis() - since), revision);
    if (listed) {
      coalescer.changed();
    }
  }

  // ---------------------------------------------------------------- publishing

  private void publish() {
    if (closed || !listed) {
      return;
    }
    long stale = staleSinceMillis;
    Snapshot snapshot = table.snapshot(revision, stale == 0 ? null : Instant.ofEpochMilli(stale))
        .withChangeReceivedNanos(changeReceivedNanos);
    changeReceivedNanos = Snapshot.NO_CHANGE;
    counters.instances(snapshot.instances().size());
    boolean news = !snapshot.sameView(published);
    published = snapshot; // newcomers get the latest revision either way
    if (!news) {
      return; // a re-list that found nothing new, or an event that changed nothing visible
    }
    for (WatchListener l : listeners) {
      deliver(l, snapshot);
    }
  }

  private void deliver(WatchListener l, Snapshot snapshot) {
    try {
      l.onSnapshot(snapshot);
    } catch (RuntimeException e) {
      logger.warn("Listener {} of service {} threw on a snapshot", l, service, e);
    }
  }

  private void deliverError(WatchListener l, Throwable err) {
    try {
      l.onUnavailable(err);
    } catch (RuntimeException e) {
      logger.warn("Listener {} of service {} threw on an error", l, service, e);
    }
  }

  private void closeWatch() {
    cancel(createWatchdog);
    createWatchdog = null;
    EtcdReader.Watching w = watching;
    watching = null;
    if (watchCounted) {
      watchCounted = false;
      stats.openEtcdWatches.decrementAndGet();
    }
    if (w != null) {
      w.cancel();
    }
  }

  private static void cancel(@Nullable Future<?> f) {
    if (f != null) {
      f.cancel(false);
    }
  }

  @Override
  public String toString() {
    return "PrefixWatcher{service=" + service + ", etcd=" + endpoints + ", layout=" + layout + "}";
  }
}
