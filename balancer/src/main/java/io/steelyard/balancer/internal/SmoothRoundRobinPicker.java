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
import java.util.Arrays;
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
   * Largest period laid out in memory: 256 KiB of {@code int}s, a share resolved to 1/65,536.
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
      // Once the gcd is 1 it stays 1: skip the gcd (a loop of its own) for every later weight.
      g = g == 1 ? 1 : IntMath.gcd(g, w);
      total += w;
    }
    long reducedTotal = total / g;
    if (reducedTotal <= MAX_PERIOD) {
      if (g == 1) {
        return weights.clone();
      }
      int[] reduced = new int[weights.length];
      for (int i = 0; i < weights.length; i++) {
        reduced[i] = weights[i] / g;
      }
      return reduced;
    }
    int[] reduced = new int[weights.length];
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
   * Every slot {@code (i, j)} ordered by its ideal time {@code (2j + 1) / (2 w[i])}, equal times
   * by endpoint index.
   *
   * <p>Endpoints of equal weight have their slots at the same times, so the times are sorted once
   * per <em>class</em> of endpoints sharing a weight, numbered in order of first appearance, and
   * each class's time is then written out as its endpoints in index order. With weights 1..10
   * over 10,000 endpoints that sorts 55 times instead of 55,000 slots, and the schedule is
   * written by copies of runs. When grouping would save little (fewer than two slots per
   * distinct time, as with a few endpoints of distinct weights), every endpoint is a class of
   * its own and the sorted times are the schedule.
   *
   * <p>The times are sorted by counting them into one bucket per time, {@code floor(times ×
   * time)}, then by insertion inside each bucket on the exact rational time. A class has at most
   * one time per bucket, so buckets are tiny and the sort is O(times) in practice. Classes with
   * the same time (1/2 is the time of every odd weight) are merged by endpoint index: by
   * concatenation when their endpoints do not interleave, else through a bit set of the
   * endpoints (by insertion when there are few).
   */
  static int[] buildSchedule(int[] weights) {
    TimeClasses classes = TimeClasses.of(weights);
    int[] ends = new int[classes.times + 1];
    // ends[b + 1] counts bucket b; prefix sums make ends[b] the start of bucket b, and the
    // scatter below moves each to the end of its bucket.
    for (int c = 0; c < classes.count; c++) {
      TimeBuckets buckets = new TimeBuckets(classes.times, classes.weight[c]);
      for (int j = 0; j < classes.weight[c]; j++) {
        ends[buckets.next() + 1]++;
      }
    }
    for (int b = 0; b < classes.times; b++) {
      ends[b + 1] += ends[b];
    }
    int[] timeClass = new int[classes.times];
    int[] timeOrdinal = new int[classes.times];
    for (int c = 0; c < classes.count; c++) {
      TimeBuckets buckets = new TimeBuckets(classes.times, classes.weight[c]);
      for (int j = 0; j < classes.weight[c]; j++) {
        int t = ends[buckets.next()]++;
        timeClass[t] = c;
        timeOrdinal[t] = j;
      }
    }
    // Bucket b now spans [ends[b - 1], ends[b]), with ends[-1] = 0; within it, classes are in
    // class order, which is the order of equal times. The insertion sort is stable.
    int from = 0;
    for (int b = 0; b < classes.times; b++) {
      int to = ends[b];
      for (int t = from + 1; t < to; t++) {
        int c = timeClass[t];
        int o = timeOrdinal[t];
        int u = t - 1;
        while (u >= from && classes.earlier(c, o, timeClass[u], timeOrdinal[u])) {
          timeClass[u + 1] = timeClass[u];
          timeOrdinal[u + 1] = timeOrdinal[u];
          u--;
        }
        timeClass[u + 1] = c;
        timeOrdinal[u + 1] = o;
      }
      from = to;
    }
    if (classes.count == weights.length) {
      return timeClass; // class c is endpoint c: each time is one slot
    }
    return classes.expand(timeClass, timeOrdinal, ends);
  }

  /**
   * The endpoints grouped by weight: class {@code c} has weight {@code weight[c]} and endpoints
   * {@code members[start[c]] .. members[start[c + 1] - 1]}, in index order. {@code times} counts
   * the classes' slots, their weights summed: the times to sort, equal ones included. Classes
   * are numbered in order of first appearance, so when every class has one endpoint, class
   * {@code c} is endpoint {@code c}.
   */
  private static final class TimeClasses {
    /** Up to this many endpoints sharing a time are merged by insertion, more by a bit set. */
    private static final int MERGE_BY_INSERTION = 32;

    final int count;
    final int times;
    final int[] weight;
    final int period;
    private final int[] start;
    private final int[] members;

    private TimeClasses(
        int count, int times, int[] weight, int period, int[] start, int[] members) {
      this.count = count;
      this.times = times;
      this.weight = weight;
      this.period = period;
      this.start = start;
      this.members = members;
    }

    static TimeClasses of(int[] weights) {
      int n = weights.length;
      int period = 0;
      int maxWeight = 0;
      for (int w : weights) {
        period += w;
        maxWeight = Math.max(maxWeight, w);
      }
      if (2L * maxWeight > period) {
        // The heaviest endpoint alone holds more than half the slots: grouping saves little.
        return oneEndpointEach(weights, period);
      }
      int[] classOfWeight = new int[maxWeight + 1]; // class + 1; 0 when no endpoint has it
      int maxCount = Math.min(n, maxWeight); // distinct weights in 1..maxWeight
      int[] weight = new int[maxCount];
      int[] start = new int[maxCount + 1];
      int count = 0;
      int times = 0;
      for (int w : weights) {
        int c = classOfWeight[w] - 1;
        if (c < 0) {
          c = count++;
          classOfWeight[w] = count;
          weight[c] = w;
          times += w;
        }
        start[c + 1]++;
      }
      if (count == n || 2L * times > period) {
        return oneEndpointEach(weights, period);
      }
      for (int c = 0; c < count; c++) {
        start[c + 1] += start[c];
      }
      int[] members = new int[n];
      int[] fill = Arrays.copyOf(start, count);
      for (int i = 0; i < n; i++) {
        members[fill[classOfWeight[weights[i]] - 1]++] = i;
      }
      return new TimeClasses(count, times, weight, period, start, members);
    }

    /** Every endpoint a class of its own: class {@code c} is endpoint {@code c}. */
    private static TimeClasses oneEndpointEach(int[] weights, int period) {
      return new TimeClasses(weights.length, period, weights, period, null, null);
    }

    /** Whether slot {@code ja} of class {@code a} comes strictly before {@code jb} of {@code b}. */
    boolean earlier(int a, int ja, int b, int jb) {
      // (2ja + 1) / (2 w[a]) < (2jb + 1) / (2 w[b])  <=>  (2ja + 1) * w[b] < (2jb + 1) * w[a]
      return (2L * ja + 1) * weight[b] < (2L * jb + 1) * weight[a];
    }

    private boolean sameTime(int a, int ja, int b, int jb) {
      return (2L * ja + 1) * weight[b] == (2L * jb + 1) * weight[a];
    }

    /**
     * The schedule: each sorted time written out as its class's endpoints, the classes of one
     * time merged by endpoint index. {@code ends[b]} is the end of bucket {@code b}; equal times
     * share a bucket.
     */
    int[] expand(int[] timeClass, int[] timeOrdinal, int[] ends) {
      int[] schedule = new int[period];
      long[] marks = new long[(members.length + 63) >>> 6];
      int out = 0;
      int from = 0;
      for (int b = 0; b < times; b++) {
        int to = ends[b];
        for (int t = from; t < to; ) {
          int run = t + 1;
          boolean disjoint = true; // each class's endpoints all after the previous class's
          while (run < to
              && sameTime(timeClass[t], timeOrdinal[t], timeClass[run], timeOrdinal[run])) {
            disjoint &= members[start[timeClass[run]]] > members[start[timeClass[run - 1] + 1] - 1];
            run++;
          }
          if (disjoint) {
            for (int r = t; r < run; r++) {
              int c = timeClass[r];
              int size = start[c + 1] - start[c];
              System.arraycopy(members, start[c], schedule, out, size);
              out += size;
            }
          } else {
            int size = 0;
            for (int r = t; r < run; r++) {
              size += start[timeClass[r] + 1] - start[timeClass[r]];
            }
            out =
                size <= MERGE_BY_INSERTION
                    ? mergeByInsertion(timeClass, t, run, schedule, out)
                    : mergeByMarks(timeClass, t, run, marks, schedule, out);
          }
          t = run;
        }
        from = to;
      }
      return schedule;
    }

    /**
     * Inserts each endpoint of the classes in index order from {@code out}; returns where the next
     * slot goes. For a few endpoints far apart, where the bit set would scan every word between
     * them: with log-uniform weights over 10,000 endpoints, merging every run through the bit set
     * made laying the schedule out a fifth slower.
     */
    private int mergeByInsertion(int[] timeClass, int from, int to, int[] schedule, int out) {
      int at = out;
      for (int r = from; r < to; r++) {
        int c = timeClass[r];
        for (int k = start[c]; k < start[c + 1]; k++) {
          int e = members[k];
          int q = at - 1;
          while (q >= out && schedule[q] > e) {
            schedule[q + 1] = schedule[q];
            q--;
          }
          schedule[q + 1] = e;
          at++;
        }
      }
      return at;
    }

    /**
     * Marks every endpoint of the classes, then writes the marked ones in index order from {@code
     * out}; returns where the next slot goes.
     */
    private int mergeByMarks(
        int[] timeClass, int from, int to, long[] marks, int[] schedule, int out) {
      int lowWord = marks.length;
      int highWord = 0;
      for (int r = from; r < to; r++) {
        int c = timeClass[r];
        for (int k = start[c]; k < start[c + 1]; k++) {
          marks[members[k] >>> 6] |= 1L << members[k];
        }
        lowWord = Math.min(lowWord, members[start[c]] >>> 6);
        highWord = Math.max(highWord, members[start[c + 1] - 1] >>> 6);
      }
      int at = out;
      for (int word = lowWord; word <= highWord; word++) {
        long bits = marks[word];
        marks[word] = 0;
        while (bits != 0) {
          schedule[at++] = (word << 6) + Long.numberOfTrailingZeros(bits);
          bits &= bits - 1;
        }
      }
      return at;
    }
  }

  /**
   * The buckets {@code floor((2j + 1) * buckets / (2 w))} of one class's slots {@code j = 0, 1,
   * ...}, stepped without a division per slot: successive {@code j} add {@code buckets / w} to
   * the quotient, the carry of the remainder taken without a branch (whether it carries follows
   * no pattern a branch predictor learns). {@code w <= buckets}, so a class has at most one slot
   * per bucket.
   */
  private static final class TimeBuckets {
    private final long twiceW;
    private final long stepQuotient;
    private final long stepRemainder;
    private long quotient;
    private long remainder;

    TimeBuckets(int buckets, int w) {
      twiceW = 2L * w;
      stepQuotient = (2L * buckets) / twiceW;
      stepRemainder = (2L * buckets) % twiceW;
      quotient = buckets / twiceW;
      remainder = buckets % twiceW;
    }

    /** The next slot's bucket. */
    int next() {
      int bucket = (int) quotient;
      quotient += stepQuotient;
      remainder += stepRemainder;
      long carry = (twiceW - 1 - remainder) >> 63; // -1 when the remainder reached 2w
      remainder -= twiceW & carry;
      quotient -= carry;
      return bucket;
    }
  }
}
