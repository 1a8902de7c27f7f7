package io.steelyard.agent;

import java.util.Map;
import java.util.TreeMap;
import javax.annotation.Nullable;

/**
 * What a registered server's metrics URL says of one service: {@link AgentMetrics}' call counter
 * and duration histogram, read from Prometheus' text format ({@value
 * AgentMetrics#SERVER_CALLS_PROMETHEUS}, {@value AgentMetrics#SERVER_CALL_DURATION_BUCKET_PROMETHEUS}).
 * The one reader of those meters, for {@code steelyard top} and the console.
 *
 * <pre>{@code
 * ServerMeters.Scrape now = ServerMeters.read(System.nanoTime(), "greeter", httpBody);
 * double p99 = ServerMeters.quantile(0.99, ServerMeters.deltas(before.buckets(), now.buckets()));
 * }</pre>
 *
 * <p>An instance advertises the URL in its value's metadata under {@value #METADATA_KEY}.
 * Stateless and thread-safe.
 */
public final class ServerMeters {

  /** The metadata key of an instance's metrics URL. */
  public static final String METADATA_KEY = "metrics";

  private ServerMeters() {}

  /**
   * One scrape: the counters of one service at {@code atNanos} (calls, failed calls, cumulative
   * buckets by upper bound in seconds), or why the URL could not be read ({@code error}).
   */
  public record Scrape(long atNanos, double calls, double errors, TreeMap<Double, Double> buckets,
      @Nullable String error) {

    /** A scrape that failed for {@code why}: no counters. */
    public static Scrape failed(long atNanos, String why) {
      return new Scrape(atNanos, 0, 0, new TreeMap<>(), why);
    }
  }

  /** Reads {@code service}'s counters from a metrics page; lines it cannot read are skipped. */
  public static Scrape read(long atNanos, String service, String text) {
    double calls = 0;
    double errors = 0;
    TreeMap<Double, Double> buckets = new TreeMap<>();
    for (PrometheusText.Sample s : PrometheusText.parse(text)) {
      if (!service.equals(s.labels().get("service"))) {
        continue;
      }
      if (s.name().equals(AgentMetrics.SERVER_CALLS_PROMETHEUS)) {
        calls += s.value();
        if (!"OK".equals(s.labels().get("status"))) {
          errors += s.value();
        }
      } else if (s.name().equals(AgentMetrics.SERVER_CALL_DURATION_BUCKET_PROMETHEUS) && s.labels().get("le") != null) {
        String le = s.labels().get("le");
        double bound = "+Inf".equals(le) ? Double.POSITIVE_INFINITY : Double.parseDouble(le);
        buckets.merge(bound, s.value(), Double::sum);
      }
    }
    return new Scrape(atNanos, calls, errors, buckets, null);
  }

  /** The calls per bucket between two scrapes of a cumulative histogram. */
  public static TreeMap<Double, Double> deltas(
      Map<Double, Double> before, Map<Double, Double> after) {
    TreeMap<Double, Double> deltas = new TreeMap<>();
    for (Map.Entry<Double, Double> b : after.entrySet()) {
      deltas.put(b.getKey(), b.getValue() - before.getOrDefault(b.getKey(), 0.0));
    }
    return deltas;
  }

  /**
   * The {@code q} quantile of calls counted in cumulative bucket {@code deltas}, as Prometheus'
   * {@code histogram_quantile} computes it: linear within the bucket that holds it. NaN when no
   * call finished.
   */
  public static double quantile(double q, TreeMap<Double, Double> deltas) {
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
}
