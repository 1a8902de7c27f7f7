package io.steelyard.discovery;

import com.google.common.annotations.VisibleForTesting;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.common.exception.CompactedException;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.internal.Backoff;
import io.steelyard.registry.internal.EtcdErrors;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps one service prefix in sync with etcd: list, then watch from the listing's revision + 1;
 * resume a broken watch from the last seen revision + 1; re-list on compaction, on a watch that
 * jetcd closed for good, and periodically; publish coalesced snapshots to its listeners.
 *
 * <p>Threading: jetcd calls back on its own threads (gRPC/Vert.x event loops, its watch retry
 * thread). Those callbacks only enqueue onto {@link #scheduler}, a serialized executor, and
 * every field below is touched only from there — except {@link #staleSinceMillis} (volatile, read
 * by stats) and {@link #listeners} (copy-on-write, changed by the registry).
 *
 * <p>jetcd 0.8.6 quirks this class is built around: a watch is closed for good (listener
 * {@code onCompleted}) after a compaction and after most errors other than UNAVAILABLE; on
 * UNAVAILABLE jetcd resumes by itself every 500 ms without backoff and without telling anyone.
 * We therefore close the jetcd watcher on every error and own the retry: capped exponential
 * backoff with jitter, resume from our own revision, and a clear stale/recovered signal.
 */
final class PrefixWatcher {

  private static final Logger logger = LoggerFactory.getLogger(PrefixWatcher.class);

  /** Each retry waits its backoff step ±25%, so a fleet of clients does not reconnect in step. */
  private static final double BACKOFF_JITTER = 0.25;

  /**
   * Test seam: runs on the watcher's executor after a listing completed and before the watch
   * starts, with the service and the listing's revision. Lets a test write keys in exactly the
   * window a naive list-then-watch would lose.
   */
  @VisibleForTesting static volatile BiConsumer<String, Long> afterListHook;

  /** Consecutive failed watch attempts after which we re-list rather than resume. */
  static final int RELIST_AFTER_WATCH_FAILURES = 3;

  /**
   * The shared etcd client of this watcher's connection, which may be replaced: after a long
   * outage the gRPC channel under jetcd backs its reconnects off towards two minutes and jetcd
   * exposes no {@code resetConnectBackoff()}, so a fresh client is the way to notice a
   * recovered etcd within seconds.
   */
  interface ClientSource {
    Client client();

    /** {@code failed} keeps failing: replace it, unless that was done recently or already. */
    void renew(Client failed);
  }

  /** Consecutive failures after which the client is renewed (rate-limited by the source). */
  static final int RENEW_CLIENT_AFTER_FAILURES = 2;

  private final ClientSource clients;
  private final String service;
  private final String endpoints;
  private final ByteSequence prefix;
  private final KeyLayout layout;
  private final WatcherConfig config;
  private final Scheduler scheduler;
  private final Backoff backoff;
  private final InstanceTable table;
  private final Coalescer coalescer;
  private final AtomicLong malformed = new AtomicLong();
  private final AtomicLong compactionRelists = new AtomicLong();
  final CopyOnWriteArrayList<ServiceWatcher.Listener> listeners = new CopyOnWriteArrayList<>();

  // Touched only from the scheduler.
  private long revision; // last revision fully applied; the watch resumes at revision + 1
  private boolean listed; // a listing has completed at least once
  private int generation; // bumps whenever a list or watch attempt is abandoned
  @Nullable private Watch.Watcher watcher;
  @Nullable private Client lastClient; // the client of the current or last attempt
  @Nullable private Future<?> createWatchdog; // fails a watch that etcd has not confirmed
  private boolean watchCounted;
  @Nullable private Future<?> retry;
  @Nullable private Future<?> periodicRelist;
  private int failures;
  private long listStartNanos;
  @Nullable private Snapshot published;
  @Nullable private Throwable lastError;
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
      Random random) {
    this.clients = clients;
    this.service = service;
    this.endpoints = endpoints;
    this.layout = layout;
    this.prefix = layout.servicePrefixBytes(service);
    this.config = config;
    this.scheduler = scheduler;
    this.backoff =
        new Backoff(
            Duration.ofNanos(config.backoffInitialNanos()),
            Duration.ofNanos(config.backoffMaxNanos()),
            BACKOFF_JITTER,
            random);
    this.table = new InstanceTable(service, layout, endpoints, malformed);
    this.coalescer = new Coalescer(scheduler, config.debounceNanos(), this::publish);
  }

  String service() {
    return service;
  }

  /** How many times a compaction forced a re-list. Any thread. */
  long compactionRelists() {
    return compactionRelists.get();
  }

  long malformedCount() {
    return malformed.get();
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
  void addListener(ServiceWatcher.Listener listener) {
    listeners.add(listener);
    scheduler.execute(
        () -> {
          if (closed || !listeners.contains(listener)) {
            return;
          }
          if (published != null) {
            deliver(listener, published);
          } else if (lastError != null) {
            deliverError(listener, lastError);
          }
        });
  }

  void removeListener(ServiceWatcher.Listener listener) {
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
            DiscoveryStats.STALE_WATCHES.decrementAndGet();
          }
          logger.debug("Stopped watching service {} at {}", service, endpoints);
        });
  }

  // ---------------------------------------------------------------- listing

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
      Client client = lastClient = clients.client();
      client
          .getKVClient()
          .get(prefix, GetOption.builder().isPrefix(true).build())
          .orTimeout(config.listTimeoutNanos(), TimeUnit.NANOSECONDS)
          .whenComplete((resp, err) -> scheduler.execute(() -> onListed(gen, resp, err)));
    } catch (RuntimeException e) { // a closed client throws synchronously
      onListed(gen, null, e);
    }
  }

  private void onListed(int gen, @Nullable GetResponse resp, @Nullable Throwable err) {
    if (closed || gen != generation) {
      return;
    }
    if (err != null) {
      failed("list", err, this::list);
      return;
    }
    long fetchedNanos = scheduler.nanoTime();
    Map<String, InstanceTable.KeyedValue> listing = new HashMap<>(resp.getKvs().size() * 2);
    for (KeyValue kv : resp.getKvs()) {
      listing.put(
          kv.getKey().toString(StandardCharsets.UTF_8),
          new InstanceTable.KeyedValue(kv.getValue().getBytes(), kv.getModRevision()));
    }
    table.replaceAll(listing);
    long listedAt = resp.getHeader().getRevision();
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
    BiConsumer<String, Long> hook = afterListHook;
    if (hook != null) {
      hook.accept(service, listedAt);
    }
    schedulePeriodicRelist();
    watch();
  }

  private void schedulePeriodicRelist() {
    cancel(periodicRelist);
    periodicRelist =
        scheduler.schedule(
            () -> {
              if (!closed && retry == null) {
                list();
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
    WatchOption option =
        WatchOption.builder()
            .isPrefix(true)
            .withRevision(revision + 1)
            // A member cut off from the quorum keeps the stream open and silent; requireLeader
            // makes it fail the watch instead, so we move to a member that has a leader.
            .withRequireLeader(true)
            // The created notification is our "etcd is back" signal after a resume.
            .withCreateNotify(true)
            .build();
    try {
      Client client = lastClient = clients.client();
      watcher =
          client
              .getWatchClient()
              .watch(
                  prefix,
                  option,
                  Watch.listener(
                      resp -> scheduler.execute(() -> onWatchResponse(gen, resp)),
                      err -> scheduler.execute(() -> onWatchError(gen, err)),
                      () -> scheduler.execute(() -> onWatchCompleted(gen))));
      watchCounted = true;
      DiscoveryStats.OPEN_ETCD_WATCHES.incrementAndGet();
    } catch (RuntimeException e) {
      onWatchError(gen, e);
      return;
    }
    // jetcd's watch stream waits for the connection instead of failing while etcd is down,
    // so silence is the only symptom: no confirmation in time counts as a failed attempt.
    cancel(createWatchdog);
    createWatchdog =
        scheduler.schedule(
            () -> onWatchError(gen, new java.util.concurrent.TimeoutException(
                "etcd did not confirm the watch within "
                    + TimeUnit.NANOSECONDS.toMillis(config.listTimeoutNanos()) + " ms")),
            config.listTimeoutNanos(),
            TimeUnit.NANOSECONDS);
  }

  private void onWatchResponse(int gen, WatchResponse resp) {
    if (closed || gen != generation) {
      return;
    }
    memberId = resp.getHeader().getMemberId();
    cancel(createWatchdog);
    createWatchdog = null;
    if (staleSinceMillis != 0) {
      recovered(); // any response, created notification included, proves the stream is back
    }
    boolean changed = false;
    List<WatchEvent> events = resp.getEvents();
    for (WatchEvent event : events) {
      KeyValue kv = event.getKeyValue();
      String key = kv.getKey().toString(StandardCharsets.UTF_8);
      switch (event.getEventType()) {
        case PUT -> changed |= table.put(key, kv.getValue().getBytes(), kv.getModRevision());
        case DELETE -> changed |= table.remove(key);
        default -> logger.debug("Ignoring unrecognized watch event on key {} of service {}",
            InstanceTable.printable(key), service);
      }
      revision = Math.max(revision, kv.getModRevision());
    }
    if (events.isEmpty() && resp.isProgressNotify()) {
      revision = Math.max(revision, resp.getHeader().getRevision());
    }
    failures = 0;
    if (changed) {
      coalescer.changed(); // all events of this response are applied: one publish at most
    }
  }

  private void onWatchError(int gen, Throwable err) {
    if (closed || gen != generation) {
      return;
    }
    generation++; // whatever the old stream still delivers is ignored from now on
    closeWatch();
    CompactedException compacted = compacted(err);
    if (compacted != null) {
      // Events after our revision are gone: only a fresh listing is trustworthy.
      compactionRelists.incrementAndGet();
      logger.info(
          "Watch of service {} at {} fell behind compaction (compacted revision {}, ours {});"
              + " re-listing", service, endpoints, compacted.getCompactedRevision(), revision);
      list();
      return;
    }
    // Resume from our revision; after a few failures in a row re-list instead: a member that
    // keeps answering "future revision" (etcd restored from an older backup) or an error we do
    // not recognise must not trap the watcher in resuming forever.
    failed("watch", err, () -> {
      if (failures >= RELIST_AFTER_WATCH_FAILURES) {
        list();
      } else {
        watch();
      }
    });
  }

  private void onWatchCompleted(int gen) {
    if (closed || gen != generation) {
      return; // we closed it ourselves
    }
    // jetcd closed the watch for good without an error we saw: re-list to be sure of the state.
    generation++;
    closeWatch();
    failed("watch", new IllegalStateException("watch closed by jetcd"), this::list);
  }

  // ---------------------------------------------------------------- failure and staleness

  private void failed(String what, Throwable err, Runnable retryAction) {
    failures++;
    // etcd answered "no" (permission, credentials, TLS): not an outage. Retry only slowly, in case
    // an operator fixes the role, never with a new client, and say so instead of "cannot reach".
    RegistryException classified = EtcdErrors.toRegistryException(what + " service " + service, err);
    if (classified.kind().refused()) {
      err = classified;
    }
    lastError = err;
    boolean refused = classified.kind().refused();
    // A new client reads the certificate files again, so a TLS refusal renews it too (rotated
    // certificates are picked up without a restart); other refusals would only fail again.
    boolean renewable = !refused || classified.kind() == RegistryException.Kind.TLS;
    if (renewable && failures >= RENEW_CLIENT_AFTER_FAILURES && lastClient != null) {
      clients.renew(lastClient);
    }
    long delay = refused ? backoff.cappedDelayNanos() : backoff.delayNanos(failures - 1);
    if (refused && staleSinceMillis == 0) {
      staleSinceMillis = Math.max(1, scheduler.currentTimeMillis());
      DiscoveryStats.STALE_WATCHES.incrementAndGet();
      logger.warn(
          "etcd at {} refused to {} service {}: {}; {}, retrying every {} ms in case the role or"
              + " credentials are fixed",
          endpoints, what, service, classified.getMessage(),
          listed
              ? "serving the last known " + (published == null ? 0 : published.instances().size())
                  + " instances"
              : "no instances known yet",
          TimeUnit.NANOSECONDS.toMillis(delay));
      if (listed) {
        coalescer.flush();
      }
    } else if (staleSinceMillis == 0) {
      staleSinceMillis = Math.max(1, scheduler.currentTimeMillis());
      DiscoveryStats.STALE_WATCHES.incrementAndGet();
      if (listed) {
        logger.warn(
            "Lost etcd at {} while watching service {} ({} failed); serving the last known {}"
                + " instances of revision {} until it recovers",
            endpoints, service, what, published == null ? 0 : published.instances().size(),
            revision, err);
      } else {
        logger.warn(
            "Cannot reach etcd at {} to list service {} ({} failed); no instances known yet,"
                + " retrying", endpoints, service, what, err);
      }
      if (listed) {
        coalescer.flush(); // listeners learn about the staleness, instances unchanged
      }
    } else {
      logger.debug("Retry {} of service {} failed again ({} consecutive): {}",
          what, service, failures, err.toString());
    }
    if (!listed) {
      for (ServiceWatcher.Listener l : listeners) {
        deliverError(l, err);
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

  private void recovered() {
    if (staleSinceMillis == 0) {
      return;
    }
    long since = staleSinceMillis;
    staleSinceMillis = 0;
    DiscoveryStats.STALE_WATCHES.decrementAndGet();
    logger.info(
        "etcd at {} reachable again for service {} after {} ms stale; at revision {}",
        endpoints, service, Math.max(0, scheduler.currentTimeMillis() - since), revision);
    if (listed) {
      coalescer.changed();
    }
  }

  @Nullable
  private static CompactedException compacted(Throwable err) {
    for (Throwable t = err; t != null; t = t.getCause()) {
      if (t instanceof CompactedException c) {
        return c;
      }
    }
    return null;
  }

  // ---------------------------------------------------------------- publishing

  private void publish() {
    if (closed || !listed) {
      return;
    }
    long stale = staleSinceMillis;
    Snapshot snapshot = table.snapshot(revision, stale == 0 ? null : Instant.ofEpochMilli(stale));
    boolean news = published == null
        || !snapshot.sameInstances(published)
        || snapshot.isStale() != published.isStale();
    published = snapshot; // newcomers get the latest revision either way
    if (!news) {
      return; // a re-list that found nothing new, or an event that changed no instance
    }
    for (ServiceWatcher.Listener l : listeners) {
      deliver(l, snapshot);
    }
  }

  private void deliver(ServiceWatcher.Listener l, Snapshot snapshot) {
    try {
      l.onSnapshot(snapshot);
    } catch (RuntimeException e) {
      logger.warn("Listener {} of service {} threw on a snapshot", l, service, e);
    }
  }

  private void deliverError(ServiceWatcher.Listener l, Throwable err) {
    try {
      l.onUnavailable(err);
    } catch (RuntimeException e) {
      logger.warn("Listener {} of service {} threw on an error", l, service, e);
    }
  }

  private void closeWatch() {
    cancel(createWatchdog);
    createWatchdog = null;
    Watch.Watcher w = watcher;
    watcher = null;
    if (watchCounted) {
      watchCounted = false;
      DiscoveryStats.OPEN_ETCD_WATCHES.decrementAndGet();
    }
    if (w != null) {
      try {
        w.close();
      } catch (RuntimeException e) {
        logger.debug("Closing the watch of service {} failed", service, e);
      }
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
