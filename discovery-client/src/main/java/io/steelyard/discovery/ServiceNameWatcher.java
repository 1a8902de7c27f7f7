package io.steelyard.discovery;

import static com.google.common.base.Preconditions.checkState;
import static java.util.Objects.requireNonNull;

import io.steelyard.discovery.EtcdReader.Event;
import io.steelyard.discovery.EtcdReader.KeyVersion;
import io.steelyard.discovery.EtcdReader.Listing;
import io.steelyard.discovery.EtcdReader.WatchBatch;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.internal.Backoff;
import io.steelyard.registry.internal.RetryPolicy;
import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The names of every service that has at least one instance key in etcd, kept live: one listing
 * of the registry prefix ({@link KeyLayout#registryPrefix}), then a watch of it from the listing's
 * revision + 1. The catalog of the xDS control plane, Spring Cloud's service list and any other
 * "which services are there" question.
 *
 * <pre>{@code
 * ServiceNameWatcher names = ServiceNameWatcher.builder(connection)
 *     .layout(KeyLayout.defaults())
 *     .open(services -> log.info("services now: {}", services));
 * names.awaitFirstListing(Duration.ofSeconds(5));
 * names.names();                                     // [greeter, orders]
 * names.close();
 * }</pre>
 *
 * <p>Keys are read by {@link KeyLayout#parse}: drain notes and service configs ({@link
 * KeyLayout#isReserved}) are passed over, and any other key under the prefix that is not an
 * instance key is skipped, counted ({@link #malformedCount}) and logged once.
 *
 * <p>Failures: every etcd call goes through registry-core's call layer (a timeout, failures
 * classified by code) and every failure is judged by the one {@link RetryPolicy} (backoff, the
 * longest delay after a refusal, a fresh client after failures in a row). Meanwhile the last
 * known names stay served ({@link #isStale} says so). A watch that fails resumes from the last
 * revision seen; a watch whose revision etcd compacted lists again.
 *
 * <p>Threading: thread-safe. Its state lives on discovery's {@code steelyard-discovery} thread,
 * where the listener is called: the listener must not block. Ownership: the watcher owns its etcd
 * client and closes it on {@link #close}.
 */
public final class ServiceNameWatcher implements AutoCloseable {

  private static final Logger logger = LoggerFactory.getLogger(ServiceNameWatcher.class);

  /** Told the names each time they change. */
  @FunctionalInterface
  public interface Listener {
    /**
     * The names now, sorted and immutable: after the first listing (even when empty) and after
     * every change. Called on the discovery thread: do not block.
     */
    void onNames(SortedSet<String> names);

    /**
     * etcd failed or refused (a {@link RegistryException} with a one-line message); the last
     * names stay served and the watcher retries.
     */
    default void onFailure(RegistryException error) {}
  }

  private final WatchRegistry.SharedClient clients;
  private final String endpoints;
  private final KeyLayout layout;
  private final String root;
  private final Scheduler scheduler;
  private final Executor closer;
  private final RetryPolicy retries;
  private final Listener listener;
  private final CountDownLatch firstListing = new CountDownLatch(1);
  private final AtomicLong malformed = new AtomicLong();
  private volatile SortedSet<String> names = new TreeSet<>();
  private volatile long staleSinceMillis; // 0 = fresh

  // Scheduler only.
  private final Map<String, String> serviceByKey = new HashMap<>();
  private final Map<String, Integer> keysByService = new HashMap<>();
  private final Set<String> reportedMalformed = new HashSet<>();
  private long revision;
  private int attempt;
  private boolean closed;
  @Nullable private EtcdReader.Watching watching;
  @Nullable private Future<?> retry;

  ServiceNameWatcher(
      WatchRegistry.SharedClient clients,
      String endpoints,
      KeyLayout layout,
      WatcherConfig config,
      Scheduler scheduler,
      Executor closer,
      Random random,
      Listener listener) {
    this.clients = requireNonNull(clients, "clients");
    this.endpoints = requireNonNull(endpoints, "endpoints");
    this.layout = requireNonNull(layout, "layout");
    this.root = layout.registryPrefix();
    this.scheduler = requireNonNull(scheduler, "scheduler");
    this.closer = requireNonNull(closer, "closer");
    this.listener = requireNonNull(listener, "listener");
    this.retries =
        new RetryPolicy(
            new Backoff(
                Duration.ofNanos(config.backoffInitialNanos()),
                Duration.ofNanos(config.backoffMaxNanos()),
                WatcherDefaults.BACKOFF_JITTER,
                random),
            WatcherDefaults.RENEW_CLIENT_AFTER_FAILURES);
  }

  public static Builder builder(EtcdConnection connection) {
    return new Builder(connection);
  }

  /** The names as last listed or watched, sorted and immutable; empty before the first listing. */
  public SortedSet<String> names() {
    return names;
  }

  /** Whether the first listing is in. */
  public boolean listed() {
    return firstListing.getCount() == 0;
  }

  /**
   * Waits up to {@code timeout} for the first listing; whether it is in. Blocks the calling
   * thread: never call it from the listener.
   */
  public boolean awaitFirstListing(Duration timeout) throws InterruptedException {
    return firstListing.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
  }

  /** Whether etcd is failing now, so the names may be out of date. */
  public boolean isStale() {
    return staleSinceMillis != 0;
  }

  /** Since when etcd has been failing, as {@link Snapshot#staleSince()}; empty while it answers. */
  public Optional<Instant> staleSince() {
    long since = staleSinceMillis;
    return since == 0 ? Optional.empty() : Optional.of(Instant.ofEpochMilli(since));
  }

  /** Keys under the prefix skipped since the watcher started because they are no instance key. */
  public long malformedCount() {
    return malformed.get();
  }

  /** Stops the watch and closes the etcd client; no listener call follows. Idempotent. */
  @Override
  public void close() {
    scheduler.execute(() -> {
      if (closed) {
        return;
      }
      closed = true;
      attempt++;
      stopWatch();
      if (retry != null) {
        retry.cancel(false);
      }
      closer.execute(clients::close); // may block for a moment
    });
  }

  void start() {
    scheduler.execute(this::list);
  }

  private void list() {
    if (closed) {
      return;
    }
    int a = ++attempt;
    stopWatch();
    EtcdReader reader;
    CompletableFuture<Listing> answer;
    try {
      reader = clients.reader();
      answer = reader.list(root);
    } catch (RuntimeException e) { // a closed client throws synchronously
      scheduler.execute(() -> failed(a, null, "list", e, this::list));
      return;
    }
    answer.whenComplete((listing, err) -> scheduler.execute(() -> {
      if (a != attempt || closed) {
        return;
      }
      if (err != null) {
        failed(a, reader, "list", err, this::list);
      } else {
        onListing(a, reader, listing);
      }
    }));
  }

  private void onListing(int a, EtcdReader reader, Listing listing) {
    serviceByKey.clear();
    keysByService.clear();
    for (KeyVersion kv : listing.keys()) {
      put(kv.key());
    }
    revision = listing.revision();
    answered();
    publish(true);
    firstListing.countDown();
    watch(a, reader);
  }

  private void watch(int a, EtcdReader reader) {
    try {
      watching = reader.watch(root, revision + 1, new EtcdReader.WatchCallbacks() {
        @Override
        public void onBatch(WatchBatch batch) {
          scheduler.execute(() -> {
            if (a == attempt && !closed) {
              applyBatch(batch);
            }
          });
        }

        @Override
        public void onCompacted(long compactedRevision) {
          RegistryException e = new RegistryException(RegistryException.Kind.COMPACTED,
              "watch " + root + ": etcd compacted revision " + compactedRevision
                  + ", after revision " + revision + ", so the names are listed again", null);
          scheduler.execute(() -> failed(a, reader, "watch", e, ServiceNameWatcher.this::list));
        }

        @Override
        public void onError(Throwable error) {
          scheduler.execute(() -> failed(a, reader, "watch", error, () -> resume(reader)));
        }

        @Override
        public void onCompleted() {
          onError(new IllegalStateException("watch closed by etcd client"));
        }
      });
    } catch (RuntimeException e) {
      failed(a, reader, "watch", e, () -> resume(reader));
    }
  }

  /** Watches again from the last revision seen, on the current client. */
  private void resume(EtcdReader failedReader) {
    if (closed) {
      return;
    }
    int a = ++attempt;
    stopWatch();
    EtcdReader reader;
    try {
      reader = clients.reader();
    } catch (RuntimeException e) {
      failed(a, failedReader, "watch", e, () -> resume(failedReader));
      return;
    }
    watch(a, reader);
  }

  private void applyBatch(WatchBatch batch) {
    // Any answer of the watch, its created notification included, means etcd is back.
    answered();
    boolean changed = false;
    for (Event event : batch.events()) {
      KeyVersion kv = event.kv();
      revision = Math.max(revision, kv.modRevision());
      changed |= event.delete() ? remove(kv.key()) : put(kv.key());
    }
    revision = Math.max(revision, batch.revision());
    publish(changed);
  }

  /** Whether the key added a service. */
  private boolean put(String key) {
    if (serviceByKey.containsKey(key)) {
      return false;
    }
    String service = layout.serviceOf(key).orElse(null);
    if (service == null) {
      if (!layout.isReserved(key)) {
        malformed.incrementAndGet();
        if (reportedMalformed.add(key)) {
          logger.warn("Skipping key {} in etcd at {}: not an instance key of {} ({}<service>/<instance>)",
              key, endpoints, layout, root);
        }
      }
      return false;
    }
    serviceByKey.put(key, service);
    return keysByService.merge(service, 1, Integer::sum) == 1;
  }

  /** Whether the key's removal removed a service. */
  private boolean remove(String key) {
    reportedMalformed.remove(key);
    String service = serviceByKey.remove(key);
    if (service == null) {
      return false;
    }
    return keysByService.merge(service, -1, (n, d) -> n + d == 0 ? null : n + d) == null;
  }

  private void publish(boolean changed) {
    if (!changed) {
      return;
    }
    SortedSet<String> next = Collections.unmodifiableSortedSet(new TreeSet<>(keysByService.keySet()));
    if (next.equals(names) && listed()) {
      return;
    }
    names = next;
    try {
      listener.onNames(next);
    } catch (RuntimeException e) {
      logger.warn("A listener of the service names under {} failed", root, e);
    }
  }

  private void answered() {
    retries.reset();
    if (staleSinceMillis != 0) {
      logger.info("etcd at {} answers again; service names under {} current as of revision {}",
          endpoints, root, revision);
      staleSinceMillis = 0;
    }
  }

  private void failed(int a, @Nullable EtcdReader reader, String what, Throwable err, Runnable next) {
    if (a != attempt || closed) {
      return;
    }
    int n = ++attempt;
    stopWatch();
    RetryPolicy.Decision d = retries.failed(what + " " + root, err);
    if (d.failures() == 1) {
      staleSinceMillis = Math.max(1, scheduler.currentTimeMillis());
      logger.warn("etcd at {}: {}; {} and retrying", endpoints, d.error().getMessage(),
          listed() ? "serving the " + names.size() + " service names known" : "no service names yet",
          d.error().getCause());
    } else {
      logger.debug("{} {} failed again ({} in a row): {}", what, root, d.failures(), d.error().getMessage());
    }
    if (d.renewClient() && reader != null) {
      clients.renew(reader);
    }
    try {
      listener.onFailure(d.error());
    } catch (RuntimeException e) {
      logger.warn("A listener of the service names under {} failed", root, e);
    }
    retry = scheduler.schedule(() -> {
      if (n == attempt && !closed) {
        next.run();
      }
    }, d.delayNanos(), TimeUnit.NANOSECONDS);
  }

  private void stopWatch() {
    if (watching != null) {
      watching.cancel();
      watching = null;
    }
  }

  @Override
  public String toString() {
    return "ServiceNameWatcher{etcd=" + endpoints + ", prefix=" + root + "}";
  }

  /** Options of a {@link ServiceNameWatcher}; each may be set once. */
  public static final class Builder {
    private final EtcdConnection connection;
    @Nullable private KeyLayout layout;
    @Nullable private Duration backoffInitial;
    private Duration backoffMax = Duration.ofMillis(WatcherDefaults.BACKOFF_MAX_MILLIS);

    private Builder(EtcdConnection connection) {
      this.connection = requireNonNull(connection, "connection");
    }

    /** The key layout; default {@link KeyLayout#defaults()}. */
    public Builder layout(KeyLayout layout) {
      checkState(this.layout == null, "layout already set");
      this.layout = requireNonNull(layout, "layout");
      return this;
    }

    /**
     * Retry delays while etcd fails: from {@code initial}, doubling up to {@code max}; defaults
     * {@value ServiceWatcher#DEFAULT_BACKOFF_INITIAL_MILLIS} ms and {@value
     * ServiceWatcher#DEFAULT_BACKOFF_MAX_MILLIS} ms, as a {@link ServiceWatcher}'s.
     */
    public Builder backoff(Duration initial, Duration max) {
      checkState(backoffInitial == null, "backoff already set");
      WatcherConfig.DEFAULTS.withBackoff(initial, max); // validates
      this.backoffInitial = initial;
      this.backoffMax = max;
      return this;
    }

    /**
     * Starts listing and watching; {@code listener} gets the names once the first listing is in.
     *
     * @throws IllegalArgumentException if jetcd refuses the connection settings
     */
    public ServiceNameWatcher open(Listener listener) {
      WatchRegistry shared = WatchRegistry.SHARED;
      return open(shared.scheduler(), shared.closer(), new Random(), listener);
    }

    ServiceNameWatcher open(
        Scheduler scheduler, Executor closer, Random random, Listener listener) {
      requireNonNull(listener, "listener");
      WatcherConfig config = backoffInitial == null
          ? WatcherConfig.DEFAULTS
          : WatcherConfig.DEFAULTS.withBackoff(backoffInitial, backoffMax);
      ServiceNameWatcher w = new ServiceNameWatcher(
          RenewingClient.of(connection, scheduler, closer),
          connection.endpointsString(),
          layout == null ? KeyLayout.defaults() : layout,
          config,
          scheduler,
          closer,
          random,
          listener);
      w.start();
      return w;
    }
  }
}
