package io.steelyard.balancer.internal;

import static com.google.common.base.Preconditions.checkArgument;

import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.PickSubchannelArgs;
import io.grpc.LoadBalancer.SubchannelPicker;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.ThreadLocalRandom;
import javax.annotation.Nullable;

/**
 * A traffic split: each pick goes to selection {@code g}'s picker with probability {@code share[g] /
 * sum(share)}, one random {@code int} and a scan of the (at most {@value
 * io.steelyard.balancer.spi.EndpointSelection#MAX_SELECTORS}) cumulative shares; no lock, no
 * allocation beyond the selection's picker's own.
 *
 * <p>Immutable and thread-safe; equal to another with the same selection pickers and shares.
 */
final class SplitPicker extends SubchannelPicker {

  private final SubchannelPicker[] pickers;
  /** Cumulative shares, parallel to {@link #pickers}: pick {@code g} when {@code r < bounds[g]}. */
  private final int[] bounds;
  private final int total;
  /** Null in production: each thread uses {@link ThreadLocalRandom}. */
  @Nullable private final Random random;

  /** {@code shares} are positive; {@code random} null draws from {@link ThreadLocalRandom}. */
  SplitPicker(SubchannelPicker[] pickers, int[] shares, @Nullable Random random) {
    checkArgument(pickers.length > 1, "pickers: %s (expected: at least 2)", pickers.length);
    checkArgument(
        shares.length == pickers.length,
        "shares: %s (expected: %s)",
        shares.length,
        pickers.length);
    this.pickers = pickers.clone();
    this.bounds = new int[shares.length];
    int sum = 0;
    for (int g = 0; g < shares.length; g++) {
      checkArgument(shares[g] > 0, "share: %s (expected: > 0)", shares[g]);
      sum = Math.addExact(sum, shares[g]);
      bounds[g] = sum;
    }
    this.total = sum;
    this.random = random;
  }

  @Override
  public PickResult pickSubchannel(PickSubchannelArgs args) {
    int r = random == null ? ThreadLocalRandom.current().nextInt(total) : random.nextInt(total);
    int g = 0;
    while (r >= bounds[g]) {
      g++;
    }
    return pickers[g].pickSubchannel(args);
  }

  /** The selections' pickers, in split order. */
  SubchannelPicker[] selectionPickers() {
    return pickers.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof SplitPicker that
        && Arrays.equals(bounds, that.bounds)
        && Arrays.equals(pickers, that.pickers);
  }

  @Override
  public int hashCode() {
    return 31 * Arrays.hashCode(bounds) + Arrays.hashCode(pickers);
  }

  @Override
  public String toString() {
    return "SplitPicker{bounds=" + Arrays.toString(bounds)
        + ", pickers=" + Arrays.toString(pickers) + "}";
  }
}
