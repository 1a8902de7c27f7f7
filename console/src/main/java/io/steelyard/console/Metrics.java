package io.steelyard.console;

import static java.util.Objects.requireNonNull;


import io.steelyard.agent.ServerMeters;
import io.steelyard.agent.ServerMeters.Scrape;
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
 * Scrapes the metrics URL each instance advertises and reads it with {@link ServerMeters}, as
 * {@code steelyard top} does. Rates are the difference between the
 * last two scrapes of a URL, so the first scrape of a URL shows nothing yet.
 *
 * <p>Threading: thread-safe; {@link #scrape} never blocks (the JDK client's own threads fetch).
 */
final class Metrics {

  /** A URL scraped more recently than this is not fetched again (two pages share a scrape). */
  private static final long FRESH_NANOS = Duration.ofMillis(700).toNanos();

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
      record(key, Scrape.failed(at, "bad metrics URL"));
      return CompletableFuture.completedFuture(null);
    }
    return http.sendAsync(request, HttpResponse.BodyHandlers.ofString())
        .handle(
            (r, e) -> {
              if (e != null) {
                record(key, Scrape.failed(at, "unreachable"));
              } else if (r.statusCode() != 200) {
                record(key, Scrape.failed(at, "HTTP " + r.statusCode()));
              } else {
                record(key, ServerMeters.read(at, key.service(), r.body()));
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
    TreeMap<Double, Double> deltas = ServerMeters.deltas(s0.buckets(), s1.buckets());
    return new Rates(calls / seconds, calls == 0 ? 0 : errors / calls, ServerMeters.quantile(0.99, deltas),
        deltas, null);
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
    return new Rates(calls, calls == 0 ? 0 : errorCalls / calls, ServerMeters.quantile(0.99, merged), merged,
        null);
  }
}
