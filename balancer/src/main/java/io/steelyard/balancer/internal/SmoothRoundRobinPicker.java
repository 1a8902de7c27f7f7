package io.steelyard.balancer.internal;

import static java.util.Objects.requireNonNull;

import com.google.common.annotations.VisibleForTesting;
import com.google.common.math.IntMath;
import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.PickSubchannelArgs;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.steelyard.balancer.spi.PickerFactory;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * Deterministic, smooth weighted round robin with O(1) lock-free picks that scale with threads.
 *
 * <p>At build time the picker lays out one period of {@code T = sum(w) / gcd(w)} slots: endpoint
 * {@code i}'s {@code j}-th slot gets the ideal time {@code (j + 1/2) / w[i]} and the slots are
 * ordered by that time (ties by endpoint order). This is the Sainte-Laguë / Webster sequence; over
 * each period endpoint {@code i} gets exactly {@code w[i]/gcd} slots, and for every prefix of
 * length {@code k} its count {@code c_i(k)} satisfies
 *
 * <pre>  |c_i(k) - k * s_i| <= B_i = 1/2 + (n - 2) * s_i / 2,   s_i = w[i] / sum(w)</pre>
 *
 * <p>and it is never picked more than {@code 1 + floor(w[i] / w_max_other)} times in a row (with
 * equal weights: never twice in a row), also across the end of a period.
 *
 * <p><b>Threads.</b> Picks do not share one counter: each thread walks the schedule with the
 * position of its own stripe ({@link StripedPositions}), which successive pickers of a balancer
 * share so that a picker swap does not restart anyone. A pick is a plain read and write of that
 * position, a compare and two array reads: no locked instruction, no division. For the picks
 * served by one picker, as long as no two threads pick on one stripe at the same instant (see
 * {@link StripedPositions} for what such a collision costs):
 *
 * <ul>
 *   <li><em>Per stripe</em>, picks are consecutive slots of the cyclic schedule, so any {@code k}
 *       consecutive picks of one stripe satisfy {@code |c_i - k * s_i| <= 2 * B_i = 1 + (n - 2) *
 *       s_i} (a window is the difference of two prefixes, each within {@code B_i} once whole
 *       periods are taken out), and the run bound above holds. One thread alone (or threads that
 *       never share a stripe) sees exactly the single-counter sequence.
 *   <li><em>All stripes together</em>, after {@code K} picks of which {@code m} stripes served at
 *       least one: {@code |c_i - K * s_i| <= m * (1 + (n - 2) * s_i)}, whatever the interleaving,
 *       and {@code c_i = K * s_i} exactly whenever every stripe has served whole periods. The
 *       long-run proportions are therefore exact; the deviation is bounded by a constant.
 * </ul>
 *
 * <p>When the period would exceed {@value #MAX_PERIOD} slots the weights are first rescaled to
 * that resolution by cumulative rounding (each endpoint keeps at least one slot), so memory stays
 * bounded (4 bytes per slot, at most 256 KiB) and each share is within about {@code 1 /
 * MAX_PERIOD} of the exact one; the bounds above then hold for the rescaled weights.
 */
final class SmoothRoundRobinPicker extends WeightedPicker {

  /**
   * Largest period laid out in memory: 256 KiB of {@code int}s. 2^17 measured 2.2-2.5 ms to
   * build at n = 10,000 with skewed weights (the budget is 2 ms); 2^16 halves that, and a
   * share is still resolved to 1/65,536.
   */
  static final int MAX_PERIOD = 1 << 16;

  /** Endpoint index per slot of one period. */
  private final int[] schedule;

  /** Shared with the balancer's other pickers, so a picker swap does not restart a stripe. */
  private final StripedPositions positions;

  SmoothRoundRobinPicker(
      SubchannelPicker[] childPickers, int[] weights, StripedPositions positions) {
    super(childPickers, weights);
    this.positions = requireNonNull(positions, "positions");
    this.schedule = buildSchedule(periodWeights(this.weights));
  }

  /** The production factory: the balancer's pickers share stripes sized for this machine. */
  static PickerFactory newFactory() {
    return new Factory(StripedPositions::forThisMachine);
  }

  /** The balancer's pickers share {@code positions}, for exact tests. */
  @VisibleForTesting
  static PickerFactory newFactory(StripedPositions positions) {
    return new Factory(() -> positions);
  }

  /** Each selection of a split walks positions of its own from {@code positions}, for exact tests. */
  @VisibleForTesting
  static PickerFactory newFactory(Supplier<StripedPositions> positions) {
    return new Factory(positions);
  }

  /**
   * Successive pickers share positions; under a traffic split, each group's pickers share
   * positions of their own (by the group's index in the call), so that every group follows its
   * own smooth sequence: with shared positions, a group would see only the slots the others'
   * picks left it, which for a regular interleaving can be one endpoint's slots only. When the
   * groups change (a zone loses its spare capacity), an index and its positions may pass to
   * another group: that group's sequence resumes mid-cycle, and its proportions stay exact over
   * every whole cycle. Confined to the balancer's SynchronizationContext.
   */
  private static final class Factory implements PickerFactory {
    private final Supplier<StripedPositions> newPositions;
    private final List<StripedPositions> perGroup = new ArrayList<>();

    Factory(Supplier<StripedPositions> newPositions) {
      this.newPositions = newPositions;
      perGroup.add(newPositions.get());
    }

    @Override
    public SubchannelPicker newPicker(SubchannelPicker[] childPickers, int[] weights) {
      return new SmoothRoundRobinPicker(childPickers, weights, perGroup.get(0));
    }

    @Override
    public SubchannelPicker[] newPickers(
        Object[][] endpointKeys,
        SubchannelPicker[][] childPickers,
        int[][] weights,
        WeightedPolicyConfig config) {
      SubchannelPicker[] pickers = new SubchannelPicker[childPickers.length];
      for (int g = 0; g < pickers.length; g++) {
        while (perGroup.size() <= g) {
          perGroup.add(newPositions.get());
        }
        pickers[g] = new SmoothRoundRobinPicker(childPickers[g], weights[g], perGroup.get(g));
      }
      return pickers;
    }
  }

  @Override
  public PickResult pickSubchannel(PickSubchannelArgs args) {
    return resultFor(schedule[positions.next(schedule.length)], args);
  }

  /** The endpoint index of one pick on {@code stripe}, for deterministic interleavings in tests. */
  @VisibleForTesting
  int pickOnStripe(int stripe) {
    return schedule[positions.next(stripe, schedule.length)];
  }

  @VisibleForTesting
  int[] schedule() {
    return schedule.clone();
  }

  /** Weights divided by their gcd, rescaled to at most about {@link #MAX_PERIOD} in total. */
  static int[] periodWeights(int[] weights) {
    int g = 0;
    long total = 0;
    for (int w : weights) {
      g = IntMath.gcd(g, w);
      total += w;
    }
    int[] reduced = new int[weights.length];
    long reducedTotal = total / g;
    if (reducedTotal <= MAX_PERIOD) {
      for (int i = 0; i < weights.length; i++) {
        reduced[i] = weights[i] / g;
      }
      return reduced;
    }
    // Cumulative rounding: sum(reduced) == MAX_PERIOD before the at-least-one adjustment, and
    // each entry is within 1 of its exact share of MAX_PERIOD.
    long cumulative = 0;
    long previousBoundary = 0;
    for (int i = 0; i < weights.length; i++) {
      cumulative += weights[i];
      long boundary = Math.round(cumulative * (double) MAX_PERIOD / total);
      reduced[i] = (int) Math.max(1, boundary - previousBoundary);
      previousBoundary = boundary;
    }
    return reduced;
  }

  /**
   * Orders slot {@code (i, j)} by {@code (2j + 1) / (2 w[i])}: a counting sort into {@code T}
   * buckets by {@code floor(T * time)}, then an insertion sort inside each bucket by the exact
   * rational time. Buckets are almost always tiny (an endpoint has at most one slot per bucket),
   * and equal weights fill one bucket already in order, so the build is O(T + n) in practice.
   */
  static int[] buildSchedule(int[] weights) {
    int n = weights.length;
    int period = 0;
    for (int w : weights) {
      period += w;
    }
    // Slot (i, j) goes to bucket floor((2j + 1) * period / (2 w)). Successive j add
    // period / w to the quotient, so it is stepped with two divisions per endpoint instead of
    // one per slot (a 64-bit division per slot dominated the build).
    int[] slotBucket = new int[period];
    int[] bucketStart = new int[period + 1];
    int p0 = 0;
    for (int i = 0; i < n; i++) {
      long twiceW = 2L * weights[i];
      long stepQuotient = (2L * period) / twiceW;
      long stepRemainder = (2L * period) % twiceW;
      long quotient = period / twiceW;
      long remainder = period % twiceW;
      for (int j = 0; j < weights[i]; j++) {
        slotBucket[p0++] = (int) quotient;
        bucketStart[(int) quotient + 1]++;
        quotient += stepQuotient;
        remainder += stepRemainder;
        if (remainder >= twiceW) {
          remainder -= twiceW;
          quotient++;
        }
      }
    }
    for (int b = 0; b < period; b++) {
      bucketStart[b + 1] += bucketStart[b];
    }
    int[] fill = bucketStart.clone();
    int[] slotEndpoint = new int[period];
    int[] slotOrdinal = new int[period];
    p0 = 0;
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < weights[i]; j++) {
        int p = fill[slotBucket[p0++]]++;
        slotEndpoint[p] = i;
        slotOrdinal[p] = j;
      }
    }
    for (int b = 0; b < period; b++) {
      int from = bucketStart[b];
      int to = bucketStart[b + 1];
      for (int p = from + 1; p < to; p++) {
        int e = slotEndpoint[p];
        int o = slotOrdinal[p];
        int q = p - 1;
        while (q >= from && later(slotEndpoint[q], slotOrdinal[q], e, o, weights)) {
          slotEndpoint[q + 1] = slotEndpoint[q];
          slotOrdinal[q + 1] = slotOrdinal[q];
          q--;
        }
        slotEndpoint[q + 1] = e;
        slotOrdinal[q + 1] = o;
      }
    }
    return slotEndpoint;
  }

  /** Whether slot (a, ja) comes strictly after slot (b, jb): later ideal time, then higher index. */
  private static boolean later(int a, int ja, int b, int jb, int[] weights) {
    // (2ja + 1) / (2 w[a]) > (2jb + 1) / (2 w[b])  <=>  (2ja + 1) * w[b] > (2jb + 1) * w[a]
    long lhs = (2L * ja + 1) * weights[b];
    long rhs = (2L * jb + 1) * weights[a];
    return lhs > rhs || (lhs == rhs && a > b);
  }
}
