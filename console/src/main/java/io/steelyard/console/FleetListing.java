package io.steelyard.console;

import static java.util.Objects.requireNonNull;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.GetOption;
import io.steelyard.agent.ServerMeters;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.EtcdFailureText;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ValueCodec;
import io.steelyard.registry.internal.EtcdCalls;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.annotation.Nullable;

/**
 * The services page's data: one prefix listing of the registry (every service, its instance
 * count, drained count and total weight) plus the metrics its instances advertise. A listing is
 * started when the page asks and the last one is older than {@value #REFRESH_MILLIS} ms; the page
 * gets the last good listing at once, never waiting on etcd. While listings fail, that listing is
 * served marked stale since the first failure, with the failure named as the CLI names it.
 *
 * <p>Threading: thread-safe; listings run on jetcd's threads.
 */
final class FleetListing {

  static final long REFRESH_MILLIS = 1_000;

  /** One service in a listing. */
  record Service(String name, int instances, int drained, long totalWeight, int malformed,
      List<String> metricsUrls) {}

  private record Listing(Instant at, long revision, List<Service> services) {}

  private final Client client;
  private final KeyLayout layout;
  private final EtcdCalls calls;
  private final String etcdEndpoints; // named in failure texts
  private final Metrics metrics;
  private final Clock clock;
  private final AtomicBoolean listing = new AtomicBoolean();
  private final CountDownLatch firstAnswer = new CountDownLatch(1);

  @Nullable private volatile Listing last;
  @Nullable private volatile Instant attemptedAt;
  @Nullable private volatile Instant failingSince;
  @Nullable private volatile String failure;

  FleetListing(Client client, KeyLayout layout, EtcdCalls calls, String etcdEndpoints,
      Metrics metrics, Clock clock) {
    this.client = requireNonNull(client, "client");
    this.layout = requireNonNull(layout, "layout");
    this.calls = requireNonNull(calls, "calls");
    this.etcdEndpoints = requireNonNull(etcdEndpoints, "etcdEndpoints");
    this.metrics = requireNonNull(metrics, "metrics");
    this.clock = requireNonNull(clock, "clock");
  }

  /** Starts a listing unless one is running or the last is recent enough. Never blocks. */
  void refreshIfOld() {
    Instant now = clock.instant();
    Instant tried = attemptedAt;
    if (tried != null && now.toEpochMilli() - tried.toEpochMilli() < REFRESH_MILLIS) {
      return;
    }
    if (!listing.compareAndSet(false, true)) {
      return;
    }
    attemptedAt = now;
    String root = layout.registryPrefix();
    calls.call("list " + root,
            () -> client.getKVClient().get(bytes(root), GetOption.builder().isPrefix(true).build()))
        .whenComplete(
            (r, e) -> {
              try {
                if (e != null) {
                  if (failingSince == null) {
                    failingSince = clock.instant();
                  }
                  failure = EtcdFailureText.describe(e, etcdEndpoints);
                } else {
                  Listing l = parse(r);
                  last = l;
                  failingSince = null;
                  failure = null;
                  for (Service s : l.services()) {
                    metrics.scrape(s.name(), s.metricsUrls());
                  }
                }
              } finally {
                listing.set(false);
                firstAnswer.countDown();
              }
            });
  }

  /** Whether a listing has succeeded, or failed, at least once (tests wait on it). */
  boolean answered() {
    return last != null || failure != null;
  }

  /**
   * Waits up to {@code timeout} for the first listing to succeed or fail; whether it did. The
   * listing itself is bounded by the etcd call timeout, so a timeout a little longer is enough.
   */
  boolean awaitFirstAnswer(Duration timeout) throws InterruptedException {
    return firstAnswer.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
  }

  private Listing parse(GetResponse r) {
    Map<String, List<KeyValue>> byService = new TreeMap<>();
    for (KeyValue kv : r.getKvs()) {
      // Drain notes, service configs and any key that is not an instance key are no services.
      layout.serviceOf(kv.getKey().toString(StandardCharsets.UTF_8))
          .ifPresent(service -> byService.computeIfAbsent(service, s -> new ArrayList<>()).add(kv));
    }
    List<Service> services = new ArrayList<>();
    for (Map.Entry<String, List<KeyValue>> e : byService.entrySet()) {
      int instances = 0;
      int drained = 0;
      int malformed = 0;
      long total = 0;
      List<String> urls = new ArrayList<>();
      for (KeyValue kv : e.getValue()) {
        DecodedValue v = ValueCodec.decode(kv.getValue().getBytes());
        if (v instanceof DecodedValue.Accepted a) {
          instances++;
          total += a.weight();
          if (a.weight() == 0) {
            drained++;
          }
          String url = a.metadata().get(ServerMeters.METADATA_KEY);
          if (url != null) {
            urls.add(url);
          }
        } else {
          malformed++;
        }
      }
      services.add(new Service(e.getKey(), instances, drained, total, malformed, List.copyOf(urls)));
    }
    return new Listing(clock.instant(), r.getHeader().getRevision(), List.copyOf(services));
  }

  /** The page's JSON: the last listing, its staleness and the failure that makes it stale. */
  JsonObject json(boolean readOnly) {
    Listing l = last;
    JsonObject o = new JsonObject();
    o.addProperty("prefix", layout.prefix());
    o.addProperty("readOnly", readOnly);
    Instant since = failingSince;
    o.addProperty("stale", since != null);
    o.addProperty("staleSince", since == null ? null : since.toString());
    o.addProperty("error", failure);
    o.addProperty("listedAt", l == null ? null : l.at().toString());
    o.addProperty("revision", l == null ? null : l.revision());
    JsonArray array = new JsonArray();
    if (l != null) {
      for (Service s : l.services()) {
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
    }
    o.add("services", array);
    return o;
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
