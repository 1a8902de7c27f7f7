package io.steelyard.balancer.spi;

/**
 * Walker's alias method with Vose's O(n) construction: picks index {@code i} with probability
 * {@code w[i] / sum(w)} from one random {@code long}, two array reads, no lock, no allocation.
 * The table is one {@code long} per index, whatever the weights. {@code weighted_random} picks
 * with it, {@code weighted_least_request} draws its candidates from it, and a balancer outside
 * gRPC (Spring Cloud LoadBalancer's, say) can do the same.
 *
 * <p>The 64 random bits are split: the high 32 choose a column by multiply-shift (bias at most
 * n / 2^32, i.e. below 2.4e-6 for n = 10,000), the low 31 are the biased coin of that column,
 * compared with a threshold stored with 31-bit resolution.
 *
 * <pre>{@code
 * long[] table = AliasTable.of(new int[] {1, 3});
 * int index = AliasTable.sample(table, ThreadLocalRandom.current().nextLong()); // 1 three times in four
 * }</pre>
 */
public final class AliasTable {

  private static final double COIN_SCALE = 0x1p31;

  private AliasTable() {}

  /**
   * The packed alias table of {@code weights} (all positive): per column, the keep threshold
   * (scaled to 2^31) in the high 32 bits and the alias in the low 32 bits.
   */
  public static long[] of(int[] weights) {
    int n = weights.length;
    long[] scaled = new long[n];
    long total = 0;
    for (int i = 0; i < n; i++) {
      scaled[i] = (long) weights[i] * n;
      total += weights[i];
    }
    return packed(scaled, total);
  }

  /**
   * The packed alias table of {@code weights}, all non-negative with a positive sum; an index of
   * weight 0 is never drawn. For weights that are not integers, scale them (to a sum near 2^40,
   * say: the sum times the number of weights must stay below 2^63).
   */
  public static long[] of(long[] weights) {
    int n = weights.length;
    long[] scaled = new long[n];
    long total = 0;
    for (int i = 0; i < n; i++) {
      scaled[i] = weights[i] * n;
      total += weights[i];
    }
    return packed(scaled, total);
  }

  private static long[] packed(long[] scaled, long total) {
    int n = scaled.length;
    int[] threshold = new int[n];
    int[] alias = new int[n];
    buildAliasTable(scaled, total, threshold, alias);
    long[] table = new long[n];
    for (int i = 0; i < n; i++) {
      table[i] = ((long) threshold[i] << 32) | alias[i];
    }
    return table;
  }

  /** The index that the 64 random bits {@code r} select from a table made by {@link #of}. */
  public static int sample(long[] table, long r) {
    int column = (int) (((r >>> 32) * table.length) >>> 32);
    long entry = table[column];
    return columnOrAlias(column, entry, (int) r & Integer.MAX_VALUE);
  }

  /**
   * The index that the 32 random bits {@code r} select from the {@code columns} entries of a
   * table made by {@link #of} that start at {@code from} in {@code tables} (several tables of the
   * same length laid end to end; an index is relative to its table). One random {@code long}
   * makes two draws. The column is {@code r × columns >>> 32}, and the coin is what that product
   * leaves below 2^32: for each column it runs over about {@code 2^32 / columns} evenly spaced
   * values, so its bias, like the column's, stays below {@code columns / 2^32}.
   */
  public static int sample(long[] tables, int from, int columns, int r) {
    long product = (r & 0xFFFF_FFFFL) * columns;
    int column = (int) (product >>> 32);
    long entry = tables[from + column];
    return columnOrAlias(column, entry, (int) product >>> 1);
  }

  /**
   * {@code column} when {@code coin} (below 2^31) is under its threshold in {@code entry}, else
   * its alias. Branch-free: the coin is a fair 50/50 for many columns, so a branch would
   * mispredict; {@code keep} is all ones when coin < threshold, else zero (both below 2^31).
   */
  private static int columnOrAlias(int column, long entry, int coin) {
    int keep = (coin - (int) (entry >>> 32)) >> 31;
    return (column & keep) | ((int) entry & ~keep);
  }

  /**
   * Vose's alias construction in exact integer arithmetic: column capacities are {@code w[i] * n}
   * ({@code scaled}, consumed) against a full column of {@code total = sum(w)}, so no rounding
   * accumulates while columns are paired; only the final per-column threshold is rounded (to
   * 2^-31).
   */
  static void buildAliasTable(long[] scaled, long total, int[] threshold, int[] alias) {
    int n = scaled.length;
    int[] small = new int[n];
    int[] large = new int[n];
    int smallSize = 0;
    int largeSize = 0;
    for (int i = 0; i < n; i++) {
      if (scaled[i] < total) {
        small[smallSize++] = i;
      } else {
        large[largeSize++] = i;
      }
    }
    while (smallSize > 0 && largeSize > 0) {
      int s = small[--smallSize];
      int l = large[largeSize - 1];
      // Below 1, but it can round to 1 when the sum is large: kept an int, as a full column's.
      long rounded = Math.round(scaled[s] / (double) total * COIN_SCALE);
      threshold[s] = (int) Math.min(rounded, Integer.MAX_VALUE);
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
