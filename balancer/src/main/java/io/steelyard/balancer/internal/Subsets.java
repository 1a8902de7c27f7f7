package io.steelyard.balancer.internal;

import com.google.common.annotations.VisibleForTesting;
import io.grpc.LoadBalancer.FixedResultPicker;
import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.grpc.Status;
import io.steelyard.balancer.spi.EndpointSubsets;
import io.steelyard.balancer.spi.PickerFactory;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Function;
import javax.annotation.Nullable;
import javax.annotation.concurrent.NotThreadSafe;

/**
 * The metadata step of a weighted balancer, between the READY endpoints and the policy's {@link
 * PickerFactory}: with {@code subset} in the config, the factory builds its picker over the
 * endpoints the first matching selector chooses (or all, or a failing picker, by the fallback);
 * with {@code split}, over each subset, under a {@link SplitPicker} that chooses a subset per
 * call by percentage. Without either, the factory's picker over every READY endpoint is returned
 * as it is, so a plain pick pays nothing for this step. {@link EndpointSubsets} states the rules.
 *
 * <p>Order of steps: a split chooses the subset, the subset's endpoints are then weighted by the
 * policy. Panic ({@link EffectiveWeights#panic}) is decided before, over every endpoint.
 *
 * <p>Threading: {@link #newPicker} runs in the balancer's SynchronizationContext; its pickers are
 * immutable and thread-safe.
 */
@NotThreadSafe
final class Subsets {

  /** Null in production: split pickers draw from {@code ThreadLocalRandom}. */
  @Nullable private final Random random;

  Subsets() {
    this(null);
  }

  /** Split pickers draw from {@code random}, for exact tests. */
  @VisibleForTesting
  Subsets(@Nullable Random random) {
    this.random = random;
  }

  /**
   * The picker over the READY endpoints {@code keys} (parallel to {@code pickers} and {@code
   * weights}, at least one) that {@code config}'s subset or split allows, built by {@code
   * factory}; {@code metadata} gives an endpoint's metadata by key (null: none).
   */
  SubchannelPicker newPicker(
      PickerFactory factory,
      Object[] keys,
      SubchannelPicker[] pickers,
      int[] weights,
      WeightedPolicyConfig config,
      Function<Object, Map<String, String>> metadata) {
    EndpointSubsets subsets = config.endpointSubsets();
    if (subsets == null) {
      return factory.newPicker(keys, pickers, weights, config);
    }
    List<Map<String, String>> selectors = subsets.selectors();
    int[][] members = new int[selectors.size()][];
    for (int s = 0; s < members.length; s++) {
      members[s] = matching(selectors.get(s), keys, metadata);
      if (!subsets.isSplit() && members[s].length > 0) {
        int[] m = members[s];
        return factory.newPicker(select(keys, m), select(pickers, m), select(weights, m), config);
      }
    }
    if (!subsets.isSplit()) {
      return subsets.fallbackToAny()
          ? factory.newPicker(keys, pickers, weights, config)
          : new FixedResultPicker(PickResult.withError(Status.UNAVAILABLE.withDescription(
              "no READY endpoint matches " + describe(selectors) + " (subset fallback: none)")));
    }
    return split(factory, keys, pickers, weights, config, subsets, members);
  }

  private SubchannelPicker split(
      PickerFactory factory,
      Object[] keys,
      SubchannelPicker[] pickers,
      int[] weights,
      WeightedPolicyConfig config,
      EndpointSubsets subsets,
      int[][] members) {
    int groups = 0;
    boolean anyShare = false;
    for (int s = 0; s < members.length; s++) {
      if (members[s].length > 0) {
        groups++;
        anyShare |= subsets.basisPoints(s) > 0;
      }
    }
    if (groups == 0) {
      return factory.newPicker(keys, pickers, weights, config);
    }
    Object[][] groupKeys = new Object[groups][];
    SubchannelPicker[][] groupPickers = new SubchannelPicker[groups][];
    int[][] groupWeights = new int[groups][];
    int[] shares = new int[groups];
    int g = 0;
    for (int s = 0; s < members.length; s++) {
      // A subset with no READY endpoint is left out: its share goes to the others in proportion
      // to theirs, or evenly when theirs are all 0 (the only READY endpoints are never refused).
      int share = anyShare ? subsets.basisPoints(s) : 1;
      if (members[s].length > 0 && share > 0) {
        groupKeys[g] = select(keys, members[s]);
        groupPickers[g] = select(pickers, members[s]);
        groupWeights[g] = select(weights, members[s]);
        shares[g++] = share;
      }
    }
    SubchannelPicker[] built =
        factory.newPickers(
            Arrays.copyOf(groupKeys, g),
            Arrays.copyOf(groupPickers, g),
            Arrays.copyOf(groupWeights, g),
            config);
    return g == 1 ? built[0] : new SplitPicker(built, Arrays.copyOf(shares, g), random);
  }

  /** Indices of the endpoints whose metadata matches {@code selector}, in order. */
  private static int[] matching(
      Map<String, String> selector, Object[] keys, Function<Object, Map<String, String>> metadata) {
    int[] out = new int[keys.length];
    int n = 0;
    for (int i = 0; i < keys.length; i++) {
      if (EndpointSubsets.matches(selector, metadata.apply(keys[i]))) {
        out[n++] = i;
      }
    }
    return Arrays.copyOf(out, n);
  }

  private static <T> T[] select(T[] all, int[] indices) {
    T[] out = Arrays.copyOf(all, indices.length);
    for (int j = 0; j < indices.length; j++) {
      out[j] = all[indices[j]];
    }
    return out;
  }

  private static int[] select(int[] all, int[] indices) {
    int[] out = new int[indices.length];
    for (int j = 0; j < indices.length; j++) {
      out[j] = all[indices[j]];
    }
    return out;
  }

  /** {@code selector {version=v2}} or {@code selectors {version=v2}, {version=v1}}. */
  static String describe(List<Map<String, String>> selectors) {
    StringBuilder sb = new StringBuilder(selectors.size() == 1 ? "selector " : "selectors ");
    for (int s = 0; s < selectors.size(); s++) {
      sb.append(s == 0 ? "" : ", ").append(selectors.get(s));
    }
    return sb.toString();
  }
}
