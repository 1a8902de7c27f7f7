package io.steelyard.benchmarks;

import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.PickSubchannelArgs;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.steelyard.balancer.spi.AliasTable;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * Baselines for comparison only: pickers written the naive ways, and {@link DrawsOnly}, the
 * random draws of a {@code weighted_least_request} pick without its loads. Each returns a
 * precomputed {@link PickResult} per endpoint, like the real pickers, so only the selection
 * itself is compared.
 */
final class NaivePickers {

  private NaivePickers() {}

  /**
   * Weighted round robin over a list holding each endpoint {@code weight} times, behind a
   * read-write lock (as if the list could be swapped in place). Weights whose sum exceeds
   * {@value #MAX_EXPANDED} are scaled down to fit, or the list could not be built at all.
   */
  static final class ExpandedListUnderLock extends SubchannelPicker {
    static final int MAX_EXPANDED = 1 << 22;
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private final List<PickResult> expanded;
    private final AtomicInteger next = new AtomicInteger();

    ExpandedListUnderLock(PickResult[] results, int[] weights) {
      long total = Arrays.stream(weights).asLongStream().sum();
      double scale = total > MAX_EXPANDED ? MAX_EXPANDED / (double) total : 1;
      List<PickResult> list = new ArrayList<>();
      for (int i = 0; i < results.length; i++) {
        long copies = Math.max(1, (long) (weights[i] * scale));
        for (long c = 0; c < copies; c++) {
          list.add(results[i]);
        }
      }
      this.expanded = list;
    }

    @Override
    public PickResult pickSubchannel(PickSubchannelArgs args) {
      // The read lock guards the list against an in-place update (under the write lock).
      lock.readLock().lock();
      try {
        return expanded.get(Math.floorMod(next.getAndIncrement(), expanded.size()));
      } finally {
        lock.readLock().unlock();
      }
    }
  }

  /** Weighted random by a linear scan of the weights: O(n) per pick. */
  static final class LinearScan extends SubchannelPicker {
    private final PickResult[] results;
    private final int[] weights;
    private final long total;

    LinearScan(PickResult[] results, int[] weights) {
      this.results = results.clone();
      this.weights = weights.clone();
      this.total = Arrays.stream(weights).asLongStream().sum();
    }

    @Override
    public PickResult pickSubchannel(PickSubchannelArgs args) {
      long r = ThreadLocalRandom.current().nextLong(total);
      for (int i = 0; i < weights.length; i++) {
        r -= weights[i];
        if (r < 0) {
          return results[i];
        }
      }
      return results[results.length - 1];
    }
  }

  /** Weighted random by binary search over prefix sums: O(log n) per pick. */
  static final class PrefixSumBinarySearch extends SubchannelPicker {
    private final PickResult[] results;
    private final long[] cumulative;

    PrefixSumBinarySearch(PickResult[] results, int[] weights) {
      this.results = results.clone();
      this.cumulative = new long[weights.length];
      long sum = 0;
      for (int i = 0; i < weights.length; i++) {
        sum += weights[i];
        cumulative[i] = sum;
      }
    }

    @Override
    public PickResult pickSubchannel(PickSubchannelArgs args) {
      long r = ThreadLocalRandom.current().nextLong(cumulative[cumulative.length - 1]);
      int i = Arrays.binarySearch(cumulative, r + 1);
      return results[i >= 0 ? i : -i - 1];
    }
  }

  /**
   * The draws of a {@code weighted_least_request} pick and nothing else: {@link
   * WeightedPolicyConfig#DEFAULT_CHOICE_COUNT} candidates from the alias table, a candidate equal
   * to the best so far drawn again up to {@value #MAX_REDRAWS} times, the better one by inverse
   * weight alone. With no call outstanding (as in {@link PickerBenchmark}) a candidate's score is
   * its inverse weight, so for the same weights and random numbers this picker returns the
   * endpoints {@code weighted_least_request} returns while reading no endpoint's load: what a pick
   * that keeps those decisions costs at the least.
   */
  static final class DrawsOnly extends SubchannelPicker {
    /** {@code weighted_least_request}'s bound on redraws. */
    static final int MAX_REDRAWS = 4;

    private final PickResult[] results;
    private final long[] aliasTable;
    private final long[] inverseWeightBits;

    DrawsOnly(PickResult[] results, int[] weights) {
      this.results = results.clone();
      this.aliasTable = AliasTable.of(weights);
      this.inverseWeightBits = new long[weights.length];
      for (int i = 0; i < weights.length; i++) {
        inverseWeightBits[i] = Double.doubleToRawLongBits(1.0 / weights[i]);
      }
    }

    @Override
    public PickResult pickSubchannel(PickSubchannelArgs args) {
      return results[choose(ThreadLocalRandom.current())];
    }

    /** The index picked with the random numbers {@code rnd} gives. */
    int choose(Random rnd) {
      int best = AliasTable.sample(aliasTable, rnd.nextLong());
      long bestBits = inverseWeightBits[best];
      for (int k = 1; k < WeightedPolicyConfig.DEFAULT_CHOICE_COUNT; k++) {
        int candidate = AliasTable.sample(aliasTable, rnd.nextLong());
        for (int redraw = 0; candidate == best && redraw < MAX_REDRAWS; redraw++) {
          candidate = AliasTable.sample(aliasTable, rnd.nextLong());
        }
        if (candidate != best) {
          long bits = inverseWeightBits[candidate];
          long less = (bits - bestBits) >> 63; // all ones when strictly lower: ties keep the first
          best = (candidate & (int) less) | (best & ~(int) less);
          bestBits = (bits & less) | (bestBits & ~less);
        }
      }
      return best;
    }
  }
}
