package io.steelyard.console;

import static java.util.Objects.requireNonNull;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import io.steelyard.agent.ServerMeters;
import io.steelyard.registry.EtcdFailureText;
import io.steelyard.registry.admin.InstanceStore;
import io.steelyard.registry.admin.RegisteredInstance;
import io.steelyard.discovery.ServiceWatcher;
import io.steelyard.discovery.Snapshot;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.ServiceInstance;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One service's live page: the instances as discovery's {@link ServiceWatcher} sees them (a new
 * view within milliseconds of an etcd change, kept and marked stale while etcd is unreachable),
 * joined with what the watcher does not carry — each lease's time to live and the weight a drain
 * replaced, read through {@link InstanceStore#list} — and the metrics each instance advertises.
 * Every change bumps a version that the page's event stream waits on.
 *
 * <p>Threading: thread-safe. Watcher callbacks only store and signal; the blocking read runs on
 * the executor passed in, one at a time.
 */
final class ServicePage implements AutoCloseable {

  private static final Logger logger = LoggerFactory.getLogger(ServicePage.class);

  /**
   * How often lease TTLs and drain notes are read again without a change: one range read plus one
   * call per distinct lease, so not every second; the TTL shown counts down in between.
   */
  static final Duration STORE_READ_INTERVAL = Duration.ofSeconds(5);

  private final String service;
  private final InstanceStore store;
  private final Metrics metrics;
  private final String etcdEndpoints; // named in failure texts
  private final Clock clock;
  private final Executor executor;
  private final ServiceWatcher watcher;
  private final AtomicBoolean reading = new AtomicBoolean();
  private final Object changed = new Object();

  private long version; // guarded by changed
  @Nullable private volatile Snapshot snapshot;
  @Nullable private volatile String watchError;
  private volatile Map<String, RegisteredInstance> stored = Map.of();
  @Nullable private volatile Instant storedAt;
  @Nullable private volatile String readError;
  @Nullable private volatile Instant readFailingSince;
  private volatile long lastViewedMillis;
  private volatile boolean storeOutdated = true;

  ServicePage(String service, Function<ServiceWatcher.Listener, ServiceWatcher> watch,
      InstanceStore store, Metrics metrics, String etcdEndpoints, Clock clock, Executor executor) {
    this.service = requireNonNull(service, "service");
    this.store = requireNonNull(store, "store");
    this.metrics = requireNonNull(metrics, "metrics");
    this.etcdEndpoints = requireNonNull(etcdEndpoints, "etcdEndpoints");
    this.clock = requireNonNull(clock, "clock");
    this.executor = requireNonNull(executor, "executor");
    this.lastViewedMillis = clock.millis();
    this.watcher = watch.apply(new ServiceWatcher.Listener() {
      @Override
      public void onSnapshot(Snapshot s) {
        snapshot = s;
        watchError = null;
        storeOutdated = true; // the drain note may have changed with the weight
        bump();
      }

      @Override
      public void onUnavailable(Throwable cause) {
        watchError = EtcdFailureText.describe(cause, etcdEndpoints);
        bump();
      }
    });
    refresh();
  }

  String service() {
    return service;
  }

  /** Notes that a page looks at this view, so the console keeps it open. */
  void viewed() {
    lastViewedMillis = clock.millis();
  }

  boolean idleFor(Duration d) {
    return clock.millis() - lastViewedMillis > d.toMillis();
  }

  /**
   * Scrapes the metrics URLs of the current view, and reads lease TTLs and drain notes when the
   * view changed or the last read is {@link #STORE_READ_INTERVAL} old (unless a read still runs).
   */
  void refresh() {
    Snapshot s = snapshot;
    if (s != null) {
      List<String> urls = new ArrayList<>();
      for (ServiceInstance i : s.instances()) {
        String url = i.metadata().get(ServerMeters.METADATA_KEY);
        if (url != null) {
          urls.add(url);
        }
      }
      metrics.scrape(service, urls).whenComplete((v, e) -> bump());
    }
    Instant last = storedAt;
    boolean due = storeOutdated || last == null
        || Duration.between(last, clock.instant()).compareTo(STORE_READ_INTERVAL) >= 0;
    if (!due || !reading.compareAndSet(false, true)) {
      return;
    }
    storeOutdated = false;
    try {
      executor.execute(this::read);
    } catch (RuntimeException rejected) {
      reading.set(false);
      logger.warn("console: cannot refresh {}: {}", service, rejected.toString());
    }
  }

  private void read() {
    try {
      Map<String, RegisteredInstance> byAddress = new HashMap<>();
      for (RegisteredInstance i : store.list(service, true)) {
        if (i.value() instanceof DecodedValue.Accepted a) {
          byAddress.put(a.address(), i);
        }
      }
      stored = Map.copyOf(byAddress);
      storedAt = clock.instant();
      readError = null;
      readFailingSince = null;
    } catch (RuntimeException e) {
      readError = EtcdFailureText.describe(e, etcdEndpoints);
      if (readFailingSince == null) {
        readFailingSince = clock.instant();
      }
    } finally {
      reading.set(false);
      bump();
    }
  }

  private void bump() {
    synchronized (changed) {
      version++;
      changed.notifyAll();
    }
  }

  /** Waits until the version differs from {@code seen}, at most {@code max}; returns the version. */
  long awaitChange(long seen, Duration max) throws InterruptedException {
    long deadline = System.nanoTime() + max.toNanos();
    synchronized (changed) {
      while (version == seen) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          break;
        }
        java.util.concurrent.TimeUnit.NANOSECONDS.timedWait(changed, left);
      }
      return version;
    }
  }

  /** Whether the watcher has delivered its first view (tests wait on it). */
  boolean listed() {
    return snapshot != null;
  }

  JsonObject json(boolean readOnly) {
    Snapshot s = snapshot;
    Map<String, RegisteredInstance> read = stored;
    Instant readAt = storedAt;
    Instant now = clock.instant();
    JsonObject o = new JsonObject();
    o.addProperty("service", service);
    o.addProperty("readOnly", readOnly);
    o.addProperty("revision", s == null ? null : s.revision());
    Instant staleSince = earliest(s == null ? null : s.staleSince().orElse(null), readFailingSince);
    o.addProperty("listed", s != null);
    o.addProperty("stale", staleSince != null || (s == null && watchError != null));
    o.addProperty("staleSince", staleSince == null ? null : staleSince.toString());
    o.addProperty("error", watchError != null ? watchError : readError);
    List<ServiceInstance> instances = s == null ? List.of() : s.instances();
    long total = 0;
    double observedTotal = 0;
    Map<String, Metrics.Rates> rates = new HashMap<>();
    for (ServiceInstance i : instances) {
      total += i.weight();
      String url = i.metadata().get(ServerMeters.METADATA_KEY);
      Metrics.Rates r = url == null ? Metrics.Rates.none("no metrics URL") : metrics.rates(service, url);
      rates.put(i.address(), r);
      if (r.measured()) {
        observedTotal += r.callsPerSecond();
      }
    }
    o.addProperty("totalWeight", total);
    JsonArray rows = new JsonArray();
    for (ServiceInstance i : instances) {
      JsonObject j = new JsonObject();
      j.addProperty("address", i.address());
      j.addProperty("weight", i.weight());
      j.addProperty("state", i.weight() == 0 ? "drained" : "registered");
      JsonObject meta = new JsonObject();
      i.metadata().forEach(meta::addProperty);
      j.add("metadata", meta);
      RegisteredInstance r = read.get(i.address());
      long ttl = -1;
      if (r != null && r.ttlSeconds() >= 0 && readAt != null) {
        ttl = Math.max(0, r.ttlSeconds() - Duration.between(readAt, now).toSeconds());
      }
      j.addProperty("ttlSeconds", ttl < 0 ? null : ttl);
      j.addProperty("lease", r == null || r.leaseId() == 0 ? null : Long.toHexString(r.leaseId()));
      j.addProperty("drainedFrom", r == null || r.drainedFromWeight() < 0 ? null : r.drainedFromWeight());
      Metrics.Rates m = rates.get(i.address());
      JsonNumbers.number(j, "callsPerSecond", m.callsPerSecond());
      JsonNumbers.number(j, "p99Seconds", m.p99Seconds());
      JsonNumbers.number(j, "errorRate", m.errorRate());
      j.addProperty("metricsNote", m.note());
      JsonNumbers.number(j, "expectedShare", total == 0 ? 0 : (double) i.weight() / total);
      JsonNumbers.number(j, "observedShare",
          m.measured() && observedTotal > 0 ? m.callsPerSecond() / observedTotal : Double.NaN);
      rows.add(j);
    }
    o.add("instances", rows);
    JsonArray malformed = new JsonArray();
    if (s != null) {
      for (Snapshot.MalformedKey k : s.malformed()) {
        JsonObject j = new JsonObject();
        j.addProperty("key", k.key());
        j.addProperty("reason", k.reason());
        malformed.add(j);
      }
    }
    o.add("malformed", malformed);
    return o;
  }

  @Nullable
  private static Instant earliest(@Nullable Instant a, @Nullable Instant b) {
    if (a == null) {
      return b;
    }
    return b == null || a.isBefore(b) ? a : b;
  }

  @Override
  public void close() {
    watcher.close();
    bump();
  }
}
