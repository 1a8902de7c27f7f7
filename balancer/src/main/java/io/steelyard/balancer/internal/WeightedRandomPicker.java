package io.steelyard.balancer.internal;

import com.google.common.annotations.VisibleForTesting;
import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.PickSubchannelArgs;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.steelyard.balancer.spi.PickerFactory;
import java.util.Random;
import java.util.concurrent.ThreadLocalRandom;
import javax.annotation.Nullable;

/**
 * Picks endpoint {@code i} with probability {@code w[i] / sum(w)} using Walker's alias method
 * (Vose's O(n) construction): one random {@code long} per pick, two array reads, no lock, no
 * allocation. Memory is one {@code long} per endpoint, whatever the weights.
 *
 * <p>The 64 random bits are split: the high 32 choose a column by multiply-shift (bias at most
 * n / 2^32, i.e. below 2.4e-6 for n = 10,000), the low 31 are the biased coin of that column,
 * compared with a threshold stored with 31-bit resolution.
 */
final class WeightedRandomPicker extends WeightedPicker {

  private static final double COIN_SCALE = 0x1p31;

  /**
   * Per column: the probability of keeping the column, scaled to 2^31, in the high 32 bits, and
   * the alias in the low 32 bits. One array, so a pick touches one cache line of the table.
   */
  private final long[] table;

  /** Null in production: each thread uses {@link ThreadLocalRandom}. */
  @Nullable private final Random random;

  WeightedRandomPicker(SubchannelPicker[] childPickers, int[] weights) {
    this(childPickers, weights, null);
  }

  /** The production factory: picks draw from {@link ThreadLocalRandom}. */
  static PickerFactory newFactory() {
    return WeightedRandomPicker::new;
  }

  /** Picks draw from {@code random}, for exact, repeatable tests. */
  @VisibleForTesting
  static PickerFactory newFactory(Random random) {
    return (childPickers, weights) -> new WeightedRandomPicker(childPickers, weights, random);
  }

  @VisibleForTesting
  WeightedRandomPicker(SubchannelPicker[] childPickers, int[] weights, @Nullable Random random) {
    super(childPickers, weights);
    this.random = random;
    this.table = aliasTable(this.weights);
  }

  @Override
  public PickResult pickSubchannel(PickSubchannelArgs args) {
    long r = random == null ? ThreadLocalRandom.current().nextLong() : random.nextLong();
    return resultFor(sample(table, r), args);
  }

  /**
   * The packed alias table of {@code weights} (all positive): per column, the keep threshold
   * (scaled to 2^31) in the high 32 bits and the alias in the low 32 bits. Shared with {@link
   * LeastRequestPicker}, which draws its candidates from the same table.
   */
  static long[] aliasTable(int[] weights) {
    int n = weights.length;
    int[] threshold = new int[n];
    int[] alias = new int[n];
    buildAliasTable(weights, threshold, alias);
    long[] table = new long[n];
    for (int i = 0; i < n; i++) {
      table[i] = ((long) threshold[i] << 32) | alias[i];
    }
    return table;
  }

  /** The endpoint that the 64 random bits {@code r} select from {@link #aliasTable}'s table. */
  static int sample(long[] table, long r) {
    int column = (int) (((r >>> 32) * table.length) >>> 32);
    long entry = table[column];
    int coin = (int) r & Integer.MAX_VALUE;
    // Branch-free select (the coin is a fair 50/50 for many columns, so a branch would
    // mispredict): keep is all ones when coin < threshold, else zero; both are below 2^31.
    int keep = (coin - (int) (entry >>> 32)) >> 31;
    return (column & keep) | ((int) entry & ~keep);
  }

  /**
   * Vose's alias construction in exact integer arithmetic: column capacities are {@code w[i] * n}
   * against a full column of {@code sum(w)}, so no rounding accumulates while columns are paired;
   * only the final per-column threshold is rounded (to 2^-31).
   */
  static void buildAliasTable(int[] weights, int[] threshold, int[] alias) {
    int n = weights.length;
    long total = 0;
    for (int w : weights) {
      total += w;
    }
    long[] scaled = new long[n];
    int[] small = new int[n];
    int[] large = new int[n];
    int smallSize = 0;
    int largeSize = 0;
    for (int i = 0; i < n; i++) {
      scaled[i] = (long) weights[i] * n;
      if (scaled[i] < total) {
        small[smallSize++] = i;
      } else {
        large[largeSize++] = i;
      }
    }
    while (smallSize > 0 && largeSize > 0) {
      int s = small[--smallSize];
      int l = large[largeSize - 1];
      threshold[s] = (int) Math.round(scaled[s] / (double) total * COIN_SCALE);
      alias[s] = l;
      scaled[l] -= total - scaled[s];
      if (scaled[l] < total) {
        largeSize--;
        small[smallSize++] = l;
      }
    }
    // Whatever is left is full (exactly, in integers; the loop only ends early for these).
    while (largeSize > 0) {
      int l = large[--largeSize];
      threshold[l] = Integer.MAX_VALUE;
      alias[l] = l;
    }
    while (smallSize > 0) {
      int s = small[--smallSize];
      threshold[s] = Integer.MAX_VALUE;
      alias[s] = s;
    }
  }
}
