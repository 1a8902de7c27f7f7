package io.steelyard.console;

import static java.util.Objects.requireNonNull;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import io.steelyard.agent.ServerMeters;
import io.steelyard.discovery.ServiceNameWatcher;
import io.steelyard.discovery.ServiceWatcher;
import io.steelyard.discovery.Snapshot;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.EtcdFailureText;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.ServiceInstance;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.annotation.Nullable;
import javax.annotation.concurrent.GuardedBy;

/**
 * The services page's data, followed live through discovery: its {@link ServiceNameWatcher} names
 * every service under the prefix, and one {@link ServiceWatcher} per named service (the watch that
 * service's page, and any {@code etcd:} channel of the process, shares) gives its instance count,
 * drained count, total weight, unreadable keys and the metrics URLs its instances advertise. Both
 * list once and then watch, through the one etcd call layer and {@code RetryPolicy}, so a page
 * request costs etcd nothing: it gets the current view at once. The advertised metrics are scraped
 * at most once every {@value #SCRAPE_INTERVAL_MILLIS} ms, and only while a page asks.
 *
 * <p>While etcd fails, the watchers keep the last names and views and the page says since when
 * they are stale, naming the failure as the CLI names it.
 *
 * <p>Threading: thread-safe. The watchers' callbacks run on discovery's thread and only store
 * what they bring; a service's watcher opens and closes on {@code executor} (the console's tick
 * thread), under this object's lock, which {@link #close} takes too and which is never held while
 * waiting on etcd.
 */
final class FleetWatch implements AutoCloseable {

  /** The metrics a page shows are scraped at most this often, and only while a page asks. */
  static final long SCRAPE_INTERVAL_MILLIS = 1_000;

  /**
   * How long {@link #awaitFirstAnswer} waits at most: discovery's listing times out after 5 s, and
   * its failure then counts as the first answer; a second more for the hops.
   */
  static final Duration FIRST_ANSWER_WAIT = Duration.ofSeconds(6);

  private static final long NEVER = Long.MIN_VALUE;

  /** One service on the page. */
  record Service(String name, int instances, int drained, long totalWeight, int malformed,
      List<String> metricsUrls) {}

  private final EtcdConnection connection;
  private final KeyLayout layout;
  private final String etcdEndpoints; // named in failure texts
  private final Metrics metrics;
  private final Clock clock;
  private final Executor executor;
  private final Map<String, ServiceWatcher> watchers = new ConcurrentHashMap<>(); // written under lock
  private final Map<String, String> unavailable = new ConcurrentHashMap<>(); // before a first view
  private final Set<String> firstPending = ConcurrentHashMap.newKeySet();
  private final CountDownLatch firstAnswer = new CountDownLatch(1);
  private final AtomicLong scrapedAtMillis = new AtomicLong(NEVER);

  @GuardedBy("this") private boolean closed;
  @Nullable private volatile ServiceNameWatcher names; // set once, by start()
  private volatile boolean firstFollowed;
  @Nullable private volatile Instant namedAt;
  @Nullable private volatile String namesFailure;

  FleetWatch(EtcdConnection connection, KeyLayout layout, String etcdEndpoints, Metrics metrics,
      Clock clock, Executor executor) {
    this.connection = requireNonNull(connection, "connection");
    this.layout = requireNonNull(layout, "layout");
    this.etcdEndpoints = requireNonNull(etcdEndpoints, "etcdEndpoints");
    this.metrics = requireNonNull(metrics, "metrics");
    this.clock = requireNonNull(clock, "clock");
    this.executor = requireNonNull(executor, "executor");
  }

  /** Starts listing and watching the service names. */
  synchronized void start() {
    names = ServiceNameWatcher.builder(connection).layout(layout).open(
        new ServiceNameWatcher.Listener() {
          @Override
          public void onNames(SortedSet<String> current) {
            namedAt = clock.instant();
            onExecutor(() -> follow(current));
          }

          @Override
          public void onFailure(RegistryException error) {
            namesFailure = EtcdFailureText.describe(error, etcdEndpoints);
            if (namedAt == null) {
              firstAnswer.countDown(); // the first listing failed: the page names the failure
            }
          }
        });
  }

  private void onExecutor(Runnable task) {
    try {
      executor.execute(task);
    } catch (RejectedExecutionException closing) {
      // The console is closing: nothing to follow any more.
    }
  }

  /** Opens a watcher for each new name, closes the watchers of names that went. */
  private synchronized void follow(SortedSet<String> current) {
    if (closed) {
      return;
    }
    boolean first = !firstFollowed;
    if (first) {
      firstPending.addAll(current); // before any opens: a view may arrive at once
    }
    for (String service : current) {
      watchers.computeIfAbsent(service, this::open);
    }
    for (String service : List.copyOf(watchers.keySet())) {
      if (!current.contains(service)) {
        watchers.remove(service).close();
        unavailable.remove(service);
        seen(service);
      }
    }
    if (first) {
      firstFollowed = true;
      checkFirstAnswer();
    }
  }

  private ServiceWatcher open(String service) {
    return ServiceWatcher.builder(connection, service).layout(layout).open(
        new ServiceWatcher.Listener() {
          @Override
          public void onSnapshot(Snapshot snapshot) {
            unavailable.remove(service);
            seen(service);
          }

          @Override
          public void onUnavailable(Throwable cause) {
            unavailable.put(service, EtcdFailureText.describe(cause, etcdEndpoints));
            seen(service);
          }
        });
  }

  private void seen(String service) {
    firstPending.remove(service);
    checkFirstAnswer();
  }

  private void checkFirstAnswer() {
    if (firstFollowed && firstPending.isEmpty()) {
      firstAnswer.countDown();
    }
  }

  /**
   * Waits up to {@link #FIRST_ANSWER_WAIT} for the first names and the first view of each of them,
   * or for the first listing's failure; whether it came.
   */
  boolean awaitFirstAnswer() throws InterruptedException {
    return firstAnswer.await(FIRST_ANSWER_WAIT.toNanos(), TimeUnit.NANOSECONDS);
  }

  /** Scrapes the metrics URLs of every service unless that was done lately. Never blocks. */
  void scrapeIfDue() {
    long now = clock.millis();
    long last = scrapedAtMillis.get();
    if (last != NEVER && now - last < SCRAPE_INTERVAL_MILLIS) {
      return;
    }
    if (!scrapedAtMillis.compareAndSet(last, now)) {
      return; // another page's request scrapes
    }
    for (Service s : services()) {
      metrics.scrape(s.name(), s.metricsUrls());
    }
  }

  /** The services with at least one key, sorted by name, as their watchers see them now. */
  List<Service> services() {
    Map<String, Snapshot> views = new TreeMap<>();
    watchers.forEach((name, w) -> {
      Snapshot s = w.current();
      if (s != null && !(s.instances().isEmpty() && s.malformed().isEmpty())) {
        views.put(name, s);
      }
    });
    List<Service> out = new ArrayList<>(views.size());
    views.values().forEach(s -> out.add(summary(s)));
    return out;
  }

  private static Service summary(Snapshot s) {
    int drained = 0;
    long total = 0;
    List<String> urls = new ArrayList<>();
    for (ServiceInstance i : s.instances()) {
      total += i.weight();
      if (i.weight() == 0) {
        drained++;
      }
      String url = i.metadata().get(ServerMeters.METADATA_KEY);
      if (url != null) {
        urls.add(url);
      }
    }
    return new Service(s.service(), s.instances().size(), drained, total, s.malformed().size(),
        List.copyOf(urls));
  }

  /** The page's JSON: every service, its staleness and the failure that makes it stale. */
  JsonObject json(boolean readOnly) {
    ServiceNameWatcher n = names;
    Instant staleSince = n == null ? null : n.staleSince().orElse(null);
    String error = staleSince == null ? null : namesFailure;
    for (ServiceWatcher w : watchers.values()) {
      Snapshot s = w.current();
      if (s != null && s.staleSince().isPresent()) {
        staleSince = earliest(staleSince, s.staleSince().get());
      }
    }
    if (error == null && !unavailable.isEmpty()) {
      error = new TreeMap<>(unavailable).firstEntry().getValue();
    }
    Instant listedAt = namedAt;
    JsonObject o = new JsonObject();
    o.addProperty("prefix", layout.prefix());
    o.addProperty("readOnly", readOnly);
    o.addProperty("stale", staleSince != null || error != null);
    o.addProperty("staleSince", staleSince == null ? null : staleSince.toString());
    o.addProperty("error", error);
    o.addProperty("listedAt", listedAt == null ? null : listedAt.toString());
    JsonArray array = new JsonArray();
    for (Service s : services()) {
      JsonObject j = new JsonObject();
      j.addProperty("name", s.name());
      j.addProperty("instances", s.instances());
      j.addProperty("drained", s.drained());
      j.addProperty("totalWeight", s.totalWeight());
      j.addProperty("malformed", s.malformed());
      j.addProperty("withMetrics", s.metricsUrls().size());
      List<Metrics.Rates> rates = new ArrayList<>();
      for (String url : s.metricsUrls()) {
        rates.add(metrics.rates(s.name(), url));
      }
      Metrics.Rates combined = Metrics.combine(rates);
      JsonNumbers.number(j, "callsPerSecond", combined.callsPerSecond());
      JsonNumbers.number(j, "p99Seconds", combined.p99Seconds());
      JsonNumbers.number(j, "errorRate", combined.errorRate());
      array.add(j);
    }
    o.add("services", array);
    return o;
  }

  @Nullable
  private static Instant earliest(@Nullable Instant a, Instant b) {
    return a == null || b.isBefore(a) ? b : a;
  }

  /** Stops the names' watch and every service's; no page is served from them afterwards. */
  @Override
  public synchronized void close() {
    closed = true;
    if (names != null) {
      names.close();
    }
    watchers.values().forEach(ServiceWatcher::close);
    watchers.clear();
    firstAnswer.countDown();
  }
}
