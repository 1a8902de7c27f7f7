package io.steelyard.balancer.internal;

import static com.google.common.base.Preconditions.checkArgument;

import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.PickSubchannelArgs;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.steelyard.balancer.spi.AliasTable;
import io.steelyard.balancer.spi.LoadAwarePicker;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.ThreadLocalRandom;
import javax.annotation.Nullable;

/**
 * {@code weighted_least_request}'s picker: draws {@code choiceCount} distinct candidates with
 * probability proportional to weight (the alias table of {@link WeightedRandomPicker}, O(1) per
 * draw) and returns the one with the lowest <b>load relative to capacity</b>:
 *
 * <pre>  score(i) = ((outstanding(i) + 1) × penalty(i) / weight(i) + errorCost(i)) [× latency(i)]</pre>
 *
 * <ul>
 *   <li>{@code weight(i)} is the endpoint's registered capacity (effective weight);
 *   <li>{@code outstanding(i)} counts this client's calls on it that have started and not
 *       closed. The {@code + 1} is the call being placed: it makes an idle large server beat an
 *       idle small one (1/8 &lt; 1/1) instead of tying at 0, so at low load calls go where
 *       capacity is, and at high load outstanding calls settle in proportion to weight. This is
 *       Envoy's weighted least request, {@code weight / (active + 1)^bias}, with {@code bias = 1}
 *       (inverted: lowest score wins), used as a score over random candidates rather than as an EDF
 *       weight;
 *   <li>{@code penalty(i)} ({@link EndpointLoad#penalty()}) is 1 for an idle server and grows
 *       with a utilization it reports (ORCA);
 *   <li>{@code errorCost(i)} ({@link EndpointLoad#errorCost()}) is {@code errorPenalty × (1 -
 *       s)}, {@code s} the recent success ratio: 0 for a healthy server. The first term is the
 *       share of the server's capacity the call would find taken (above 1 it would queue), so an
 *       additive cost means the same at every size: a failing server is picked only over a
 *       candidate whose queue is already that long, however large or small the failing one is.
 *       A multiplier shrinks with the server's weight: a large failing server stays cheaper than
 *       busy small ones and keeps most of its share. Bounded by {@code errorPenalty}, it is a
 *       penalty, not an ejection: a server failing every call still takes calls once the others'
 *       queues are that long, so it is not left without traffic to prove it recovered;
 *   <li>{@code latency(i)}, the peak-EWMA latency, only when the config's {@code latency} is on
 *       and both compared candidates have a sample (else the term is left out of that
 *       comparison). Off by default: see {@link WeightedPolicyConfig#DEFAULT_LATENCY}.
 * </ul>
 *
 * <p>Candidates are drawn <em>without</em> replacement (a second draw equal to the current best
 * is redrawn, up to {@value #MAX_REDRAWS} times): with replacement, a server holding share
 * {@code s} of the weight would be both candidates with probability {@code s²} and get that
 * share of calls whatever its load (16 % of all calls for a 40 % server), enough to swamp it
 * after it degrades. With {@code n <= choiceCount} every endpoint is a candidate, scanned from a
 * random start. Ties go to the first drawn.
 *
 * <p>Immutable and thread-safe. A pick draws one random {@code long} per candidate from {@link
 * ThreadLocalRandom}, reads two volatile fields (three with the latency term) and one {@code
 * AtomicInteger} per candidate, and
 * returns a {@link PickResult} precomputed per endpoint that carries the endpoint's tracer
 * factory: no lock, no allocation (grpc then asks that factory for one tracer per call, which
 * counts the call in and out).
 */
final class LeastRequestPicker extends WeightedPicker implements LoadAwarePicker {

  /** Redraws allowed when a draw repeats the current best; bounds the loop for skewed weights. */
  static final int MAX_REDRAWS = 4;

  private final long[] aliasTable;
  private final EndpointLoad[] loads;
  private final double[] inverseWeights;
  private final PickResult[] tracedResults;
  private final int choiceCount;
  private final boolean latency;

  /** Null in production: each thread uses {@link ThreadLocalRandom}. */
  @Nullable private final Random random;

  LeastRequestPicker(
      SubchannelPicker[] childPickers,
      int[] weights,
      EndpointLoad[] loads,
      int choiceCount,
      boolean latency,
      @Nullable Random random) {
    super(childPickers, weights);
    checkArgument(
        loads.length == weights.length,
        "loads: %s entries (expected: %s, one per child picker)",
        loads.length,
        weights.length);
    checkArgument(choiceCount >= 2, "choiceCount: %s (expected: >= 2)", choiceCount);
    this.loads = loads.clone();
    this.choiceCount = choiceCount;
    this.latency = latency;
    this.random = random;
    this.aliasTable = AliasTable.of(this.weights);
    int n = weights.length;
    this.inverseWeights = new double[n];
    this.tracedResults = new PickResult[n];
    for (int i = 0; i < n; i++) {
      inverseWeights[i] = 1.0 / this.weights[i];
      PickResult stored = precomputed(i);
      tracedResults[i] =
          stored == null ? null : stored.copyWithStreamTracerFactory(loads[i].tracerFactory());
    }
  }

  @Override
  public PickResult pickSubchannel(PickSubchannelArgs args) {
    return pick(choose(), args);
  }

  /** The result for endpoint {@code best}, carrying its tracer. */
  @Override
  public PickResult pick(int best, PickSubchannelArgs args) {
    PickResult result = tracedResults[best];
    if (result != null) {
      return result;
    }
    // A child whose picker is not a fixed result (not grpc's pick_first): ask it, then add the
    // tracer. Allocates; never the case with pick_first children.
    result = childPickers[best].pickSubchannel(args);
    if (result.getSubchannel() == null || !result.getStatus().isOk()) {
      return result;
    }
    return result.copyWithStreamTracerFactory(loads[best].tracerFactory());
  }

  /** The index of the endpoint to pick. */
  @Override
  public int choose() {
    int n = loads.length;
    if (n == 1) {
      return 0;
    }
    if (n <= choiceCount) {
      int start = (int) (((nextLong() >>> 32) * n) >>> 32);
      int best = start;
      for (int k = 1; k < n; k++) {
        int candidate = start + k < n ? start + k : start + k - n;
        if (lessLoaded(candidate, best)) {
          best = candidate;
        }
      }
      return best;
    }
    int best = AliasTable.sample(aliasTable, nextLong());
    for (int k = 1; k < choiceCount; k++) {
      int candidate = AliasTable.sample(aliasTable, nextLong());
      for (int redraw = 0; candidate == best && redraw < MAX_REDRAWS; redraw++) {
        candidate = AliasTable.sample(aliasTable, nextLong());
      }
      if (candidate != best && lessLoaded(candidate, best)) {
        best = candidate;
      }
    }
    return best;
  }

  /**
   * Endpoint {@code i}'s load relative to its capacity: {@code (outstanding + 1) × penalty /
   * weight}, what the zone step's live-load spill compares with its {@code spillLoad}.
   */
  @Override
  public double loadScore(int i) {
    EndpointLoad load = loads[i];
    return (load.outstanding() + 1) * load.penalty() * inverseWeights[i];
  }

  /**
   * Endpoint {@code i}'s score without the latency term: {@link #loadScore} plus {@code
   * errorCost}. Lower is better; the zone step's live-load spill ranks candidates of different
   * zones by it.
   */
  @Override
  public double rankScore(int i) {
    return loadScore(i) + loads[i].errorCost();
  }

  /** Whether endpoint {@code a}'s score is strictly below {@code b}'s. */
  private boolean lessLoaded(int a, int b) {
    double scoreA = rankScore(a);
    double scoreB = rankScore(b);
    if (latency) {
      double latencyA = loads[a].latencyNanos();
      double latencyB = loads[b].latencyNanos();
      if (latencyA > 0 && latencyB > 0) {
        scoreA *= latencyA;
        scoreB *= latencyB;
      }
    }
    return scoreA < scoreB;
  }

  private long nextLong() {
    return random == null ? ThreadLocalRandom.current().nextLong() : random.nextLong();
  }

  @Override
  public boolean equals(Object o) {
    if (!super.equals(o)) {
      return false;
    }
    LeastRequestPicker that = (LeastRequestPicker) o;
    return choiceCount == that.choiceCount
        && latency == that.latency
        && Arrays.equals(loads, that.loads);
  }

  @Override
  public int hashCode() {
    return super.hashCode() * 31 + choiceCount * 2 + (latency ? 1 : 0);
  }

  @Override
  public String toString() {
    return super.toString()
        + "{choiceCount="
        + choiceCount
        + ", latency="
        + latency
        + ", loads="
        + (loads.length <= 16 ? Arrays.toString(loads) : loads.length + " loads")
        + "}";
  }
}
