package io.steelyard.console;

import static java.util.Objects.requireNonNull;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import javax.annotation.Nullable;

/**
 * Reads the metrics URL an instance advertises (metadata key {@value #METADATA_KEY}) as {@code
 * steelyard top} does: the agent's {@value #CALLS} counter and {@value #DURATION_BUCKET}
 * histogram of the service, in Prometheus' text format. Rates are the difference between the
 * last two scrapes of a URL, so the first scrape of a URL shows nothing yet.
 *
 * <p>Threading: thread-safe; {@link #scrape} never blocks (the JDK client's own threads fetch).
 */
final class Metrics {

  static final String METADATA_KEY = "metrics";
  /** The meters read, as the agent's {@code AgentMetrics} names them in Prometheus. */
  static final String CALLS = "steelyard_server_calls_total";
  static final String DURATION_BUCKET = "steelyard_server_call_duration_seconds_bucket";

  /** A URL scraped more recently than this is not fetched again (two pages share a scrape). */
  private static final long FRESH_NANOS = Duration.ofMillis(700).toNanos();

  /** One scrape: counters of one service at a time, or why the URL could not be read. */
  record Scrape(long atNanos, double calls, double errors, TreeMap<Double, Double> buckets,
      @Nullable String error) {}

  /**
   * What the calls between two scrapes looked like; NaN where nothing could be measured, with
   * {@code note} saying why.
   */
  record Rates(double callsPerSecond, double errorRate, double p99Seconds,
      TreeMap<Double, Double> bucketDeltas, @Nullable String note) {
    static Rates none(String note) {
      return new Rates(Double.NaN, Double.NaN, Double.NaN, new TreeMap<>(), note);
    }

    boolean measured() {
      return !Double.isNaN(callsPerSecond);
    }
  }

  private record Key(String url, String service) {}

  private record History(@Nullable Scrape previous, @Nullable Scrape latest) {}

  private final HttpClient http;
  private final LongSupplier nanoTime;
  private final Map<Key, History> history = new ConcurrentHashMap<>();
  private final Map<Key, CompletableFuture<Void>> inFlight = new ConcurrentHashMap<>();

  Metrics(HttpClient http, LongSupplier nanoTime) {
    this.http = requireNonNull(http, "http");
    this.nanoTime = requireNonNull(nanoTime, "nanoTime");
  }

  /** Scrapes every URL of {@code urls} for {@code service}; completes when all have answered. */
  CompletableFuture<Void> scrape(String service, Collection<String> urls) {
    List<CompletableFuture<Void>> all = new ArrayList<>();
    for (String url : urls) {
      all.add(scrapeOne(new Key(url, service)));
    }
    return CompletableFuture.allOf(all.toArray(new CompletableFuture<?>[0]));
  }

  private CompletableFuture<Void> scrapeOne(Key key) {
    History h = history.get(key);
    long now = nanoTime.getAsLong();
    if (h != null && h.latest() != null && now - h.latest().atNanos() < FRESH_NANOS) {
      return CompletableFuture.completedFuture(null);
    }
    return inFlight.computeIfAbsent(key, k -> fetch(k).whenComplete((r, e) -> inFlight.remove(k)));
  }

  private CompletableFuture<Void> fetch(Key key) {
    long at = nanoTime.getAsLong();
    HttpRequest request;
    try {
      request = HttpRequest.newBuilder(URI.create(key.url())).timeout(Duration.ofSeconds(1)).GET().build();
    } catch (IllegalArgumentException e) {
      record(key, new Scrape(at, 0, 0, new TreeMap<>(), "bad metrics URL"));
      return CompletableFuture.completedFuture(null);
    }
    return http.sendAsync(request, HttpResponse.BodyHandlers.ofString())
        .handle(
            (r, e) -> {
              if (e != null) {
                record(key, new Scrape(at, 0, 0, new TreeMap<>(), "unreachable"));
              } else if (r.statusCode() != 200) {
                record(key, new Scrape(at, 0, 0, new TreeMap<>(), "HTTP " + r.statusCode()));
              } else {
                record(key, parse(at, key.service(), r.body()));
              }
              return null;
            });
  }

  private void record(Key key, Scrape scrape) {
    history.compute(key, (k, h) -> new History(h == null ? null : h.latest(), scrape));
  }

  /** The rates of {@code service} at {@code url} between its last two scrapes. */
  Rates rates(String service, String url) {
    History h = history.get(new Key(url, service));
    if (h == null || h.latest() == null) {
      return Rates.none("first scrape");
    }
    Scrape s1 = h.latest();
    Scrape s0 = h.previous();
    if (s1.error() != null) {
      return Rates.none(s1.error());
    }
    if (s0 == null || s0.error() != null) {
      return Rates.none("first scrape");
    }
    double seconds = Math.max(1e-3, (s1.atNanos() - s0.atNanos()) / 1e9);
    double calls = Math.max(0, s1.calls() - s0.calls());
    double errors = Math.max(0, s1.errors() - s0.errors());
    TreeMap<Double, Double> deltas = new TreeMap<>();
    for (Map.Entry<Double, Double> b : s1.buckets().entrySet()) {
      deltas.put(b.getKey(), b.getValue() - s0.buckets().getOrDefault(b.getKey(), 0.0));
    }
    return new Rates(calls / seconds, calls == 0 ? 0 : errors / calls, quantile(0.99, deltas),
        deltas, null);
  }

  static Scrape parse(long at, String service, String text) {
    double calls = 0;
    double errors = 0;
    TreeMap<Double, Double> buckets = new TreeMap<>();
    for (PrometheusText.Sample s : PrometheusText.parse(text)) {
      if (!service.equals(s.labels().get("service"))) {
        continue;
      }
      if (s.name().equals(CALLS)) {
        calls += s.value();
        if (!"OK".equals(s.labels().get("status"))) {
          errors += s.value();
        }
      } else if (s.name().equals(DURATION_BUCKET) && s.labels().get("le") != null) {
        String le = s.labels().get("le");
        double bound = "+Inf".equals(le) ? Double.POSITIVE_INFINITY : Double.parseDouble(le);
        buckets.merge(bound, s.value(), Double::sum);
      }
    }
    return new Scrape(at, calls, errors, buckets, null);
  }

  /**
   * The {@code q} quantile of calls counted in cumulative bucket {@code deltas}, as Prometheus'
   * {@code histogram_quantile} computes it: linear within the bucket that holds it. NaN when no
   * call finished.
   */
  static double quantile(double q, TreeMap<Double, Double> deltas) {
    if (deltas.isEmpty()) {
      return Double.NaN;
    }
    double total = deltas.lastEntry().getValue();
    if (total <= 0) {
      return Double.NaN;
    }
    double rank = q * total;
    double lowerBound = 0;
    double lowerCount = 0;
    for (Map.Entry<Double, Double> d : deltas.entrySet()) {
      if (d.getValue() >= rank) {
        if (Double.isInfinite(d.getKey())) {
          return lowerBound; // beyond the largest finite bucket: its bound, as Prometheus does
        }
        double inBucket = d.getValue() - lowerCount;
        return inBucket <= 0
            ? d.getKey()
            : lowerBound + (d.getKey() - lowerBound) * (rank - lowerCount) / inBucket;
      }
      lowerBound = d.getKey();
      lowerCount = d.getValue();
    }
    return lowerBound;
  }

  /** The rates of several instances together: calls and errors summed, p99 of the merged calls. */
  static Rates combine(Collection<Rates> parts) {
    double calls = 0;
    double errorCalls = 0;
    TreeMap<Double, Double> merged = new TreeMap<>();
    boolean any = false;
    for (Rates r : parts) {
      if (!r.measured()) {
        continue;
      }
      any = true;
      calls += r.callsPerSecond();
      errorCalls += r.errorRate() * r.callsPerSecond();
      r.bucketDeltas().forEach((k, v) -> merged.merge(k, v, Double::sum));
    }
    if (!any) {
      return Rates.none("no metrics");
    }
    return new Rates(calls, calls == 0 ? 0 : errorCalls / calls, quantile(0.99, merged), merged,
        null);
  }
}
