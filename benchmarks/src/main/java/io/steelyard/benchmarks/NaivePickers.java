package io.steelyard.benchmarks;

import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.PickSubchannelArgs;
import io.grpc.LoadBalancer.SubchannelPicker;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * Baselines written the naive ways, for comparison only. Each returns a precomputed {@link
 * PickResult} per endpoint, like the real pickers, so only the selection itself is compared.
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
}
