package io.steelyard.spring.cloud;

/**
 * ADAPTER, to be replaced by a public type of the balancer module: the balancer's alias-table
 * pick ({@code io.steelyard.balancer.internal.WeightedRandomPicker#aliasTable} and {@code #sample}),
 * copied here unchanged because that class is package-private in the balancer's {@code internal}
 * package, which no other module may import. The balancer should expose it as a small public
 * value, e.g. {@code io.steelyard.balancer.WeightedIndex.of(int[] weights).pick(long random)}, and
 * this class should then go.
 *
 * <p>Walker's alias method (Vose's construction in exact integer arithmetic): picks index {@code
 * i} with probability {@code w[i] / sum(w)} from one random {@code long}, two array reads, no
 * lock, no allocation.
 */
final class AliasTable {

  private static final double COIN_SCALE = 0x1p31;

  private AliasTable() {}

  /**
   * The packed table of {@code weights} (each positive): per column, the keep threshold (scaled
   * to 2^31) in the high 32 bits and the alias in the low 32 bits.
   */
  static long[] of(int[] weights) {
    int n = weights.length;
    int[] threshold = new int[n];
    int[] alias = new int[n];
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
    long[] table = new long[n];
    for (int i = 0; i < n; i++) {
      table[i] = ((long) threshold[i] << 32) | alias[i];
    }
    return table;
  }

  /** The index that the 64 random bits {@code r} select from {@code table}. */
  static int sample(long[] table, long r) {
    int column = (int) (((r >>> 32) * table.length) >>> 32);
    long entry = table[column];
    int coin = (int) r & Integer.MAX_VALUE;
    int keep = (coin - (int) (entry >>> 32)) >> 31;
    return (column & keep) | ((int) entry & ~keep);
  }
}
