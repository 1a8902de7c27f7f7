package io.steelyard.benchmarks.capacity;

import java.util.Arrays;

/**
 * What one run measured: every call of the measured period (its arrival time, latency and
 * outcome) and each server's arrivals per time bucket. Latency is counted from the call's
 * scheduled arrival, so a late load generator cannot hide queueing (no coordinated omission);
 * a failed call counts with the time it took to fail.
 */
final class RunResult {

  final Scenario scenario;
  final CapacityMix mix;
  final Policy policy;
  final long measuredNanos;
  final long bucketNanos;
  final long eventAtNanos;

  final long[] arrivalNanos; // since the start of the measured period
  final long[] latencyNanos;
  final boolean[] failed;
  /** [bucket][server] calls received. */
  final long[][] serverArrivals;
  /** The machine's 1-minute load average at the end of the run. */
  final double loadAverage;

  RunResult(
      Scenario scenario,
      CapacityMix mix,
      Policy policy,
      long measuredNanos,
      long bucketNanos,
      long eventAtNanos,
      long[] arrivalNanos,
      long[] latencyNanos,
      boolean[] failed,
      long[][] serverArrivals,
      double loadAverage) {
    this.scenario = scenario;
    this.mix = mix;
    this.policy = policy;
    this.measuredNanos = measuredNanos;
    this.bucketNanos = bucketNanos;
    this.eventAtNanos = eventAtNanos;
    this.arrivalNanos = arrivalNanos;
    this.latencyNanos = latencyNanos;
    this.failed = failed;
    this.serverArrivals = serverArrivals;
    this.loadAverage = loadAverage;
  }

  int buckets() {
    return serverArrivals.length;
  }

  /** Latency and failure figures over calls arriving in {@code [fromNanos, toNanos)}. */
  Summary summary(long fromNanos, long toNanos) {
    int count = 0;
    int failures = 0;
    long[] latencies = new long[arrivalNanos.length];
    for (int i = 0; i < arrivalNanos.length; i++) {
      if (arrivalNanos[i] >= fromNanos && arrivalNanos[i] < toNanos) {
        latencies[count++] = latencyNanos[i];
        if (failed[i]) {
          failures++;
        }
      }
    }
    long[] sorted = Arrays.copyOf(latencies, count);
    Arrays.sort(sorted);
    int fromBucket = (int) (fromNanos / bucketNanos);
    int toBucket = (int) Math.min(buckets(), (toNanos + bucketNanos - 1) / bucketNanos);
    double[] shares = shares(fromBucket, toBucket);
    return new Summary(
        count,
        failures,
        percentile(sorted, 0.50),
        percentile(sorted, 0.99),
        percentile(sorted, 0.999),
        count == 0 ? 0 : sorted[count - 1] / 1e6,
        shares);
  }

  Summary whole() {
    return summary(0, measuredNanos);
  }

  Summary secondHalf() {
    return summary(measuredNanos / 2, measuredNanos);
  }

  /** Each server's share of the calls received in buckets {@code [from, to)}. */
  double[] shares(int from, int to) {
    int servers = mix.workers().length;
    double[] shares = new double[servers];
    long total = 0;
    for (int b = from; b < to; b++) {
      for (int s = 0; s < servers; s++) {
        shares[s] += serverArrivals[b][s];
        total += serverArrivals[b][s];
      }
    }
    for (int s = 0; s < servers; s++) {
      shares[s] = total == 0 ? 0 : shares[s] / total;
    }
    return shares;
  }

  /** p99 in ms of calls arriving in each bucket (NaN for an empty bucket). */
  double[] p99PerBucket() {
    double[] p99 = new double[buckets()];
    for (int b = 0; b < p99.length; b++) {
      p99[b] = summary(b * bucketNanos, (b + 1) * bucketNanos).p99Millis();
    }
    return p99;
  }

  /**
   * Milliseconds from the event until the largest server's share first falls below half its
   * share before the event (one bucket's resolution), or -1 if it never does; NaN without event.
   */
  double shedMillis() {
    if (scenario.event() == null) {
      return Double.NaN;
    }
    int server = mix.largest();
    int eventBucket = (int) (eventAtNanos / bucketNanos);
    double before = shares(0, eventBucket)[server];
    for (int b = eventBucket; b < buckets(); b++) {
      if (shares(b, b + 1)[server] < before / 2) {
        return ((b + 1) * bucketNanos - eventAtNanos) / 1e6;
      }
    }
    return -1;
  }

  /** Calls arriving from the event on (to the end of the measured period). */
  Summary afterEvent() {
    return summary(eventAtNanos, measuredNanos);
  }

  /** Calls arriving in the {@code lengthNanos} after the event. */
  Summary afterEvent(long lengthNanos) {
    return summary(eventAtNanos, Math.min(measuredNanos, eventAtNanos + lengthNanos));
  }

  /** The bucket in which the event happens. */
  int eventBucket() {
    return (int) (eventAtNanos / bucketNanos);
  }

  /**
   * The combined share of the servers the event touches ({@link Scenario#affected}) of the calls
   * received in buckets {@code [from, to)}.
   */
  double affectedShare(int from, int to) {
    double[] shares = shares(from, Math.min(to, buckets()));
    double sum = 0;
    for (int server : scenario.affected(mix)) {
      sum += shares[server];
    }
    return sum;
  }

  /**
   * Milliseconds from the event until the end of the first bucket in which the affected servers
   * got under 5 % of the calls (ejected, in practice), or -1 if they never did.
   */
  double outMillis() {
    int out = outBucket();
    return out < 0 ? -1 : ((out + 1) * bucketNanos - eventAtNanos) / 1e6;
  }

  private int outBucket() {
    for (int b = eventBucket(); b < buckets(); b++) {
      if (affectedShare(b, b + 1) < 0.05) {
        return b;
      }
    }
    return -1;
  }

  /**
   * After they were out ({@link #outMillis}): milliseconds from the end of the event (its start
   * if it lasts) until the end of the first bucket in which the affected servers got at least half
   * their share before the event again; -1 if never, NaN if they were never out.
   */
  double backMillis() {
    int out = outBucket();
    if (out < 0) {
      return Double.NaN;
    }
    long eventEnd =
        eventAtNanos + (scenario.eventLength() == null ? 0 : scenario.eventLength().toNanos());
    double before = affectedShare(0, eventBucket());
    for (int b = out + 1; b < buckets(); b++) {
      if (affectedShare(b, b + 1) >= before / 2) {
        return ((b + 1) * bucketNanos - eventEnd) / 1e6;
      }
    }
    return -1;
  }

  private static double percentile(long[] sorted, double q) {
    if (sorted.length == 0) {
      return Double.NaN;
    }
    int index = (int) Math.ceil(q * sorted.length) - 1;
    return sorted[Math.max(0, Math.min(sorted.length - 1, index))] / 1e6;
  }

  /** Figures over one window; latencies in milliseconds. */
  record Summary(
      int calls,
      int failures,
      double p50Millis,
      double p99Millis,
      double p999Millis,
      double maxMillis,
      double[] shares) {}
}
