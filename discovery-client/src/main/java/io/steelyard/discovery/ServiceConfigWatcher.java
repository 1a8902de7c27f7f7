package io.steelyard.discovery;

import io.steelyard.discovery.EtcdReader.Event;
import io.steelyard.discovery.EtcdReader.KeyVersion;
import io.steelyard.discovery.EtcdReader.Listing;
import io.steelyard.discovery.EtcdReader.WatchBatch;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.internal.Backoff;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Follows one service's stored service config ({@link KeyLayout#serviceConfigKey}) for every
 * channel of the process that resolves the service: read the key, then watch it from the read's
 * revision + 1; on any watch failure, back off and read again (a single key needs no history
 * check: one read is the whole state); re-read on the {@link PrefixWatcher}'s re-list interval as
 * a safety net. A failure keeps the last value (stale-serving, as for instances).
 *
 * <p>It is a watch of its own, next to the instance watch, on the same shared etcd client: one
 * key, so its events are a few bytes whatever the service's size, and it never delays or
 * re-lists the instance list. It starts with its first listener, so a plain {@link
 * ServiceWatcher} costs no config watch.
 *
 * <p>Read and watch cover the one key, not a prefix: etcd checks a watch's permission over its
 * whole range, and an operator grants a client read on exactly this key (docs/discovery.md).
 *
 * <p>Threading: every field but the listeners and the flags is touched only on {@link
 * #scheduler}, the watchers' serial executor; listeners are called there.
 */
final class ServiceConfigWatcher implements ServiceConfigChoice.Memory {

  private static final Logger logger = LoggerFactory.getLogger(ServiceConfigWatcher.class);

  private final ClientSource clients;
  private final String service;
  private final String endpoints;
  private final String key;
  private final Scheduler scheduler;
  private final Backoff backoff;
  private final long rereadNanos;
  private final List<Consumer<StoredServiceConfig>> listeners = new CopyOnWriteArrayList<>();
  private final AtomicBoolean started = new AtomicBoolean();
  private final AtomicLong reportedBadRevision = new AtomicLong(-1);
  private final AtomicBoolean fallbackAnnounced = new AtomicBoolean();
  private final AtomicReference<ServiceConfigChoice.Accepted> lastAccepted =
      new AtomicReference<>(new ServiceConfigChoice.Accepted(null, 0));

  // Scheduler only.
  private StoredServiceConfig view = StoredServiceConfig.UNKNOWN;
  private long revision;
  private int attempt;
  private int failures;
  private boolean closed;
  @Nullable private EtcdReader.Watching watching;
  @Nullable private Future<?> retry;
  @Nullable private Future<?> reread;

  ServiceConfigWatcher(
      ClientSource clients, String endpoints, KeyLayout layout, String service,
      WatcherConfig config, Scheduler scheduler, Random random) {
    this.clients = clients;
    this.service = service;
    this.endpoints = endpoints;
    this.key = layout.serviceConfigKey(service);
    this.scheduler = scheduler;
    this.backoff = new Backoff(
        Duration.ofNanos(config.backoffInitialNanos()), Duration.ofNanos(config.backoffMaxNanos()),
        0.2, random);
    this.rereadNanos = config.relistIntervalNanos();
  }

  /**
   * Adds {@code listener}, starting the watch if it is the first; it is handed the current view
   * (if the key was read) and every change after, on the scheduler.
   */
  void addListener(Consumer<StoredServiceConfig> listener) {
    listeners.add(listener);
    if (started.compareAndSet(false, true)) {
      scheduler.execute(this::read);
    }
    scheduler.execute(() -> {
      if (!closed && view.settled() && listeners.contains(listener)) {
        listener.accept(view);
      }
    });
  }

  void removeListener(Consumer<StoredServiceConfig> listener) {
    listeners.remove(listener);
  }

  /**
   * Whether the caller is the first to report the config at {@code modRevision} as bad: many
   * channels share this watcher, and the operator needs one log line per bad revision, not one
   * per channel. Any thread.
   */
  boolean firstToReport(long modRevision) {
    long last = reportedBadRevision.get();
    return last != modRevision && reportedBadRevision.compareAndSet(last, modRevision);
  }

  /**
   * Whether the caller is the first to say that channels of this service run on the resolver's
   * fallback: once per watcher, not once per channel. Any thread.
   */
  boolean firstToAnnounceFallback() {
    return fallbackAnnounced.compareAndSet(false, true);
  }

  /**
   * Remembers the config a channel accepted, for channels created while a later stored config is
   * refused: the last accepted config is the service's, not a channel's. Any thread.
   */
  @Override
  public void accepted(String json, long modRevision) {
    remember(new ServiceConfigChoice.Accepted(json, modRevision));
  }

  @Override
  @Nullable
  public ServiceConfigChoice.Accepted lastAccepted() {
    ServiceConfigChoice.Accepted last = lastAccepted.get();
    return last.json() == null ? null : last;
  }

  private void remember(ServiceConfigChoice.Accepted next) {
    lastAccepted.accumulateAndGet(next, (a, b) -> b.modRevision() > a.modRevision() ? b : a);
  }

  void close() {
    scheduler.execute(() -> {
      closed = true;
      attempt++;
      stopWatch();
      cancel(retry);
      cancel(reread);
    });
  }

  private void read() {
    if (closed) {
      return;
    }
    int a = ++attempt;
    stopWatch();
    cancel(reread);
    EtcdReader reader;
    CompletableFuture<Listing> answer;
    try {
      reader = clients.reader();
      answer = reader.get(key);
    } catch (RuntimeException e) { // a closed client throws synchronously
      failed(a, e);
      return;
    }
    answer.whenComplete((listing, err) -> fromEtcd(() -> {
      if (a != attempt || closed) {
        return;
      }
      if (err != null) {
        failed(a, err);
      } else {
        onRead(a, reader, listing);
      }
    }));
  }

  private void onRead(int a, EtcdReader reader, Listing listing) {
    StoredServiceConfig read = StoredServiceConfig.ABSENT;
    for (KeyVersion kv : listing.keys()) {
      read = StoredServiceConfig.present(new String(kv.value(), StandardCharsets.UTF_8), kv.modRevision());
    }
    revision = listing.revision();
    if (failures > 0) {
      logger.info("Reading the service config of {} at {} again", service, endpoints);
    }
    failures = 0;
    update(read);
    reread = scheduler.schedule(this::read, rereadNanos, TimeUnit.NANOSECONDS);
    try {
      watching = reader.watchKey(key, revision + 1, new EtcdReader.WatchCallbacks() {
        @Override
        public void onBatch(WatchBatch batch) {
          fromEtcd(() -> {
            if (a == attempt && !closed) {
              applyBatch(batch);
            }
          });
        }

        @Override
        public void onCompacted(long compactedRevision) {
          onError(new IllegalStateException("watch compacted at revision " + compactedRevision));
        }

        @Override
        public void onError(Throwable error) {
          fromEtcd(() -> failed(a, error));
        }

        @Override
        public void onCompleted() {
          onError(new IllegalStateException("watch closed by etcd client"));
        }
      });
    } catch (RuntimeException e) {
      failed(a, e);
    }
  }

  private void applyBatch(WatchBatch batch) {
    StoredServiceConfig next = view;
    for (Event event : batch.events()) {
      KeyVersion kv = event.kv();
      revision = Math.max(revision, kv.modRevision());
      next = event.delete()
          ? StoredServiceConfig.ABSENT
          : StoredServiceConfig.present(new String(kv.value(), StandardCharsets.UTF_8), kv.modRevision());
    }
    update(next);
  }

  private void failed(int a, Throwable err) {
    if (a != attempt || closed) {
      return;
    }
    int n = ++attempt;
    stopWatch();
    cancel(reread);
    if (failures++ == 0) {
      logger.warn("Cannot follow the service config of {} at {} ({}); keeping {} and retrying",
          service, endpoints, err.toString(),
          view.state() == StoredServiceConfig.State.PRESENT ? "the config read before" : "none");
    } else {
      logger.debug("Reading the service config of {} failed again", service, err);
    }
    if (!view.settled()) {
      update(StoredServiceConfig.UNREADABLE); // channels go on without it rather than wait
    }
    long delay = backoff.delayNanos(Math.min(failures - 1, 30));
    retry = scheduler.schedule(() -> {
      if (n == attempt && !closed) {
        read();
      }
    }, delay, TimeUnit.NANOSECONDS);
  }

  private void update(StoredServiceConfig next) {
    if (next.equals(view)) {
      return;
    }
    view = next;
    if (next.state() == StoredServiceConfig.State.ABSENT) {
      // Deleted (as of this revision): a config accepted before is nobody's to fall back on.
      remember(new ServiceConfigChoice.Accepted(null, revision));
    }
    for (Consumer<StoredServiceConfig> l : listeners) {
      try {
        l.accept(next);
      } catch (RuntimeException e) {
        logger.warn("A listener of the service config of {} failed", service, e);
      }
    }
  }

  private void stopWatch() {
    if (watching != null) {
      watching.cancel();
      watching = null;
    }
  }

  private static void cancel(@Nullable Future<?> f) {
    if (f != null) {
      f.cancel(false);
    }
  }

  @Override
  public String toString() {
    return "ServiceConfigWatcher{service=" + service + ", etcd=" + endpoints + ", key=" + key + "}";
  }

  /**
   * Hands an etcd callback to the scheduler. Once the scheduler is shut down (its owner closed
   * it, so no one listens any more) the task is dropped: a closing etcd client completes its
   * watches on the closing thread, which must not fail for it.
   */
  private void fromEtcd(Runnable task) {
    try {
      scheduler.execute(task);
    } catch (RejectedExecutionException e) {
      logger.debug("service config watch of {}: scheduler shut down, etcd callback dropped", key);
    }
  }
}
