package io.steelyard.balancer.internal;

import com.google.common.annotations.VisibleForTesting;
import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.PickSubchannelArgs;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.steelyard.balancer.spi.AliasTable;
import io.steelyard.balancer.spi.PickerFactory;
import java.util.Random;
import java.util.concurrent.ThreadLocalRandom;
import javax.annotation.Nullable;

/**
 * Picks endpoint {@code i} with probability {@code w[i] / sum(w)} using Walker's alias method
 * (Vose's O(n) construction): one random {@code long} per pick, two array reads, no lock, no
 * allocation. Memory is one {@code long} per endpoint, whatever the weights.
 *
 * <p>The table and its sampling are {@link AliasTable}'s.
 */
final class WeightedRandomPicker extends WeightedPicker {

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
    this.table = AliasTable.of(this.weights);
  }

  @Override
  public PickResult pickSubchannel(PickSubchannelArgs args) {
    long r = random == null ? ThreadLocalRandom.current().nextLong() : random.nextLong();
    return resultFor(AliasTable.sample(table, r), args);
  }
}
