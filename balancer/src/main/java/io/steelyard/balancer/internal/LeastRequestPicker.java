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
 * <p><b>How the draws are made.</b> A candidate's draw takes 32 random bits ({@link
 * AliasTable#sample(long[], int, int, int)}), so one random {@code long} makes two. Up to
 * {@value #MAX_TABLED} endpoints, the redraws are not made one by one: the build computes what
 * they add up to, the probability that a draw avoiding endpoint {@code x} ends on each endpoint
 * ({@code p(c) × (1 + p(x) + ... + p(x)^}{@value #MAX_REDRAWS}{@code )} for {@code c ≠ x}, and
 * {@code p(x)^(}{@value #MAX_REDRAWS}{@code + 1)} for {@code x} itself), and keeps an alias table per
 * {@code x} and one over the ordered pairs of first and second candidate. A pick then draws the
 * first two candidates in one draw and each further one in one draw from the best's table, so no
 * branch is taken on a repeat, which at 10 endpoints with skewed weights is most draws. The
 * candidates come out with the probabilities the redraws give them (to within the tables' 2^-31
 * resolution and a 32-bit draw's bias, below {@code n / 2^32}); what the tables change is only
 * which random bits lead to which candidates.
 *
 * <p><b>Cost.</b> Immutable and thread-safe. A pick draws one random {@code long} from {@link
 * ThreadLocalRandom} per two draws, reads per candidate one alias-table entry, its inverse
 * weight and its {@link EndpointLoad} (three volatile fields on one object, four with the
 * latency term), computes each candidate's score once, and returns a {@link PickResult}
 * precomputed per endpoint that carries the endpoint's tracer factory: no lock, no allocation
 * (grpc then asks that factory for one tracer per call, which counts the call in and out). See
 * {@link #choose} for why no branch depends on a coin or a score. The tables of the redraws cost
 * {@code 2 × n × 2^ceil(log2 n)} longs, 16 KB at {@value #MAX_TABLED} endpoints.
 */
final class LeastRequestPicker extends WeightedPicker implements LoadAwarePicker {

  /** Redraws allowed when a draw repeats the current best; bounds the loop for skewed weights. */
  static final int MAX_REDRAWS = 4;

  /** Up to this many endpoints, the redraws are precomputed into tables (see the class comment). */
  static final int MAX_TABLED = 32;

  private final long[] aliasTable;

  /**
   * Up to {@link #MAX_TABLED} endpoints: the table of a draw avoiding endpoint {@code x} starts at
   * {@code x << shift}; null above, or when every endpoint is a candidate.
   */
  @Nullable private final long[] avoiding;

  /**
   * Up to {@link #MAX_TABLED} endpoints: the alias table of the first two candidates, column
   * {@code first << shift | second}; null when {@link #avoiding} is.
   */
  @Nullable private final long[] pairs;

  /** {@code 2^shift}, the stride of {@link #avoiding}'s tables, is the least power of 2 >= n. */
  private final int shift;
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
    this.shift = 32 - Integer.numberOfLeadingZeros(Math.max(n, 1) - 1);
    if (n > choiceCount && n <= MAX_TABLED) { // with fewer, every endpoint is a candidate
      this.avoiding = new long[n << shift];
      this.pairs = new long[n << shift];
      tableRedraws(this.weights, shift, avoiding, pairs);
    } else {
      this.avoiding = null;
      this.pairs = null;
    }
    this.inverseWeights = new double[n];
    this.tracedResults = new PickResult[n];
    for (int i = 0; i < n; i++) {
      inverseWeights[i] = 1.0 / this.weights[i];
      PickResult stored = precomputed(i);
      tracedResults[i] = stored == null ? null : loads[i].traced(stored);
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

  /**
   * The index of the endpoint to pick; each candidate's score is computed once.
   *
   * <p>Without the latency term no branch depends on a coin or a score, whose outcomes are
   * random and would be mispredicted about every other time (a misprediction costs more than a
   * draw): {@link AliasTable#sample} selects the column or its alias with a mask, and the better
   * candidate is selected with the sign of the difference of the two scores' bits. Scores are
   * positive doubles (at least one call, a penalty of at least 1, a positive inverse weight, a
   * non-negative error cost), and positive doubles order as their raw bits do as {@code long}s,
   * so this is exactly {@code score(candidate) < score(best)}; a candidate equal to the best
   * (its redraws spent) ties and loses. The one branch left, above {@value #MAX_TABLED}
   * endpoints, is a draw equal to the best so far, rarely taken unless one endpoint holds much of
   * the weight.
   */
  @Override
  public int choose() {
    int n = aliasTable.length;
    if (n <= choiceCount) {
      return scanAll(n);
    }
    if (latency) {
      return chooseWithLatency();
    }
    Random rnd = random == null ? ThreadLocalRandom.current() : random;
    return pairs != null ? chooseTabled(rnd) : chooseDrawn(rnd);
  }

  /**
   * Up to {@value #MAX_TABLED} endpoints: the first two candidates from one draw of the pair
   * table, each further one from one draw of the best's table.
   */
  private int chooseTabled(Random rnd) {
    long r = rnd.nextLong();
    int pair = AliasTable.sample(pairs, 0, pairs.length, (int) (r >>> 32));
    int first = pair >>> shift;
    int second = pair & ((1 << shift) - 1);
    long firstBits = scoreBits(first);
    long secondBits = scoreBits(second);
    long less = (secondBits - firstBits) >> 63; // all ones when strictly lower: ties keep the first
    int best = (second & (int) less) | (first & ~(int) less);
    if (choiceCount == 2) {
      return best;
    }
    long bestBits = (secondBits & less) | (firstBits & ~less);
    int third = AliasTable.sample(avoiding, best << shift, 1 << shift, (int) r);
    long thirdBits = scoreBits(third);
    less = (thirdBits - bestBits) >> 63;
    best = (third & (int) less) | (best & ~(int) less);
    bestBits = (thirdBits & less) | (bestBits & ~less);
    for (int k = 3; k < choiceCount; k++) {
      int bits = (int) (rnd.nextLong() >>> 32);
      int candidate = AliasTable.sample(avoiding, best << shift, 1 << shift, bits);
      long candidateBits = scoreBits(candidate);
      less = (candidateBits - bestBits) >> 63;
      best = (candidate & (int) less) | (best & ~(int) less);
      bestBits = (candidateBits & less) | (bestBits & ~less);
    }
    return best;
  }

  /**
   * Above {@value #MAX_TABLED} endpoints: every candidate drawn from the alias table, the third
   * drawn and its load read with the first two's (a volatile read keeps the memory accesses after
   * it behind it), a repeat of the best redrawn.
   */
  private int chooseDrawn(Random rnd) {
    int n = aliasTable.length;
    long r = rnd.nextLong();
    int first = AliasTable.sample(aliasTable, 0, n, (int) (r >>> 32));
    int second = AliasTable.sample(aliasTable, 0, n, (int) r);
    int third = choiceCount > 2 ? draw(rnd) : 0;
    second = redrawn(second, first, rnd);
    long firstBits = scoreBits(first);
    long secondBits = scoreBits(second);
    long less = (secondBits - firstBits) >> 63; // all ones when strictly lower: ties keep the first
    int best = (second & (int) less) | (first & ~(int) less);
    if (choiceCount == 2) {
      return best;
    }
    long bestBits = (secondBits & less) | (firstBits & ~less);
    long thirdBits = scoreBits(third);
    if (third == best) {
      third = redrawn(third, best, rnd);
      thirdBits = scoreBits(third);
    }
    less = (thirdBits - bestBits) >> 63;
    best = (third & (int) less) | (best & ~(int) less);
    bestBits = (thirdBits & less) | (bestBits & ~less);
    for (int k = 3; k < choiceCount; k++) {
      int candidate = redrawn(draw(rnd), best, rnd);
      long candidateBits = scoreBits(candidate);
      less = (candidateBits - bestBits) >> 63;
      best = (candidate & (int) less) | (best & ~(int) less);
      bestBits = (candidateBits & less) | (bestBits & ~less);
    }
    return best;
  }

  /** {@link #choose} with the latency term, which compares candidates pairwise; the same draws. */
  private int chooseWithLatency() {
    Random rnd = random == null ? ThreadLocalRandom.current() : random;
    long r = rnd.nextLong();
    int first;
    int second;
    int third = 0; // tabled: the bits of the third candidate's draw; else its first draw
    if (pairs != null) {
      int pair = AliasTable.sample(pairs, 0, pairs.length, (int) (r >>> 32));
      first = pair >>> shift;
      second = pair & ((1 << shift) - 1);
      third = (int) r;
    } else {
      int n = aliasTable.length;
      first = AliasTable.sample(aliasTable, 0, n, (int) (r >>> 32));
      second = AliasTable.sample(aliasTable, 0, n, (int) r);
      if (choiceCount > 2) {
        third = draw(rnd);
      }
      second = redrawn(second, first, rnd);
    }
    int best = lessLoaded(second, first) ? second : first;
    for (int k = 2; k < choiceCount; k++) {
      int candidate;
      if (pairs != null) {
        int bits = k == 2 ? third : (int) (rnd.nextLong() >>> 32);
        candidate = AliasTable.sample(avoiding, best << shift, 1 << shift, bits);
      } else {
        candidate = redrawn(k == 2 ? third : draw(rnd), best, rnd);
      }
      if (lessLoaded(candidate, best)) {
        best = candidate;
      }
    }
    return best;
  }

  /** One draw from the alias table, from a new long's high half. */
  private int draw(Random rnd) {
    return AliasTable.sample(aliasTable, 0, aliasTable.length, (int) (rnd.nextLong() >>> 32));
  }

  /**
   * {@code candidate}, or while it repeats {@code best}, a new draw, up to {@value #MAX_REDRAWS}
   * times.
   */
  private int redrawn(int candidate, int best, Random rnd) {
    for (int redraw = 0; candidate == best && redraw < MAX_REDRAWS; redraw++) {
      candidate = draw(rnd);
    }
    return candidate;
  }

  /**
   * Fills {@code avoiding} with, per endpoint {@code x}, the alias table (stride {@code 2^shift},
   * padding of weight 0) of a draw that avoids {@code x} as the redraws do, and {@code pairs}
   * with the alias table of the ordered pairs (first, second): {@code p(first) × p(second | avoid
   * first)}. Probabilities are scaled to a sum of 2^40 per table; one that rounds to 0 is 1.
   */
  static void tableRedraws(int[] weights, int shift, long[] avoiding, long[] pairs) {
    int n = weights.length;
    int stride = 1 << shift;
    double total = 0;
    for (int w : weights) {
      total += w;
    }
    long[] row = new long[stride];
    long[] pairWeights = new long[n << shift];
    for (int x = 0; x < n; x++) {
      double px = weights[x] / total;
      double repeat = 1; // px^k
      double kept = 1; // 1 + px + ... + px^MAX_REDRAWS: a draw other than x ends on c this often
      for (int k = 0; k < MAX_REDRAWS; k++) {
        repeat *= px;
        kept += repeat;
      }
      repeat *= px; // px^(MAX_REDRAWS + 1): every draw was x
      for (int c = 0; c < n; c++) {
        double q = c == x ? repeat : weights[c] / total * kept;
        row[c] = Math.max(1, Math.round(q * 0x1p40));
        pairWeights[(x << shift) + c] = Math.max(1, Math.round(px * q * 0x1p40));
      }
      System.arraycopy(AliasTable.of(row), 0, avoiding, x << shift, stride);
    }
    System.arraycopy(AliasTable.of(pairWeights), 0, pairs, 0, pairs.length);
  }

  /** The raw bits of {@link #rankScore}{@code (i)}: a positive double, so they order as it does. */
  private long scoreBits(int i) {
    EndpointLoad load = loads[i];
    return Double.doubleToRawLongBits(
        (load.outstanding() + 1) * load.penalty() * inverseWeights[i] + load.errorCost());
  }

  /** Every endpoint is a candidate ({@code n <= choiceCount}), scanned from a random start. */
  private int scanAll(int n) {
    if (n == 1) {
      return 0;
    }
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
