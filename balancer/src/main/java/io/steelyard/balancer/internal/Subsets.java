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
 * call by percentage. Without either, the step within subsets runs over every READY endpoint
 * (the balancer skips this class altogether when there is no caller zone either, so a plain pick
 * pays nothing for it). {@link EndpointSubsets} states the rules.
 *
 * <p>Order of steps: a split chooses the subset; within it, the step the balancer passes (the
 * zone step, {@link ZoneRouting}, over the subset's endpoints only, when the caller's zone is
 * known) and then the policy's weighted pick. Every group of every subset is built in one {@link
 * PickerFactory#newPickers} call ({@link PickerGroups}). Panic ({@link EffectiveWeights#panic})
 * is decided before, over every endpoint.
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
   * The step run within each subset, given the subset's selector (null: every endpoint, as under
   * fallback {@code any}): the zone step, or {@link PickerGroups#WHOLE}.
   */
  @FunctionalInterface
  interface Within {
    PickerGroups.Step forSubset(@Nullable Map<String, String> selector);
  }

  /** Picks by the policy alone within each subset. */
  static final Within POLICY_ONLY = selector -> PickerGroups.WHOLE;

  /** As {@link #newPicker(PickerFactory, Object[], SubchannelPicker[], int[],
   * WeightedPolicyConfig, Function, Within)}, picking by the policy alone within each subset. */
  SubchannelPicker newPicker(
      PickerFactory factory,
      Object[] keys,
      SubchannelPicker[] pickers,
      int[] weights,
      WeightedPolicyConfig config,
      Function<Object, Map<String, String>> metadata) {
    return newPicker(factory, keys, pickers, weights, config, metadata, POLICY_ONLY);
  }

  /**
   * The picker over the READY endpoints {@code keys} (parallel to {@code pickers} and {@code
   * weights}, at least one) that {@code config}'s subset or split allows, built by {@code
   * factory} after {@code within}'s step inside each subset; {@code metadata} gives an
   * endpoint's metadata by key (null: none). Without a subset or split, {@code within}'s step
   * runs over every endpoint.
   */
  SubchannelPicker newPicker(
      PickerFactory factory,
      Object[] keys,
      SubchannelPicker[] pickers,
      int[] weights,
      WeightedPolicyConfig config,
      Function<Object, Map<String, String>> metadata,
      Within within) {
    Build build = new Build(factory, keys, pickers, weights, config);
    EndpointSubsets subsets = config.endpointSubsets();
    if (subsets == null) {
      return build.one(within.forSubset(null), PickerGroups.all(keys.length));
    }
    List<Map<String, String>> selectors = subsets.selectors();
    int[][] members = new int[selectors.size()][];
    for (int s = 0; s < members.length; s++) {
      members[s] = matching(selectors.get(s), keys, metadata);
      if (!subsets.isSplit() && members[s].length > 0) {
        return build.one(within.forSubset(selectors.get(s)), members[s]);
      }
    }
    if (!subsets.isSplit()) {
      return subsets.fallbackToAny()
          ? build.one(within.forSubset(null), PickerGroups.all(keys.length))
          : new FixedResultPicker(PickResult.withError(Status.UNAVAILABLE.withDescription(
              "no READY endpoint matches " + describe(selectors) + " (subset fallback: none)")));
    }
    return split(build, subsets, members, within);
  }

  private SubchannelPicker split(
      Build build, EndpointSubsets subsets, int[][] members, Within within) {
    int groups = 0;
    boolean anyShare = false;
    for (int s = 0; s < members.length; s++) {
      if (members[s].length > 0) {
        groups++;
        anyShare |= subsets.basisPoints(s) > 0;
      }
    }
    if (groups == 0) {
      return build.one(within.forSubset(null), PickerGroups.all(build.keys.length));
    }
    PickerGroups pickerGroups = new PickerGroups();
    PickerGroups.Assembly[] plans = new PickerGroups.Assembly[groups];
    int[] shares = new int[groups];
    int g = 0;
    for (int s = 0; s < members.length; s++) {
      // A subset with no READY endpoint is left out: its share goes to the others in proportion
      // to theirs, or evenly when theirs are all 0 (the only READY endpoints are never refused).
      int share = anyShare ? subsets.basisPoints(s) : 1;
      if (members[s].length > 0 && share > 0) {
        plans[g] = within.forSubset(subsets.selectors().get(s)).plan(pickerGroups, members[s]);
        shares[g++] = share;
      }
    }
    // One factory call for every subset's groups: per-endpoint state spans them all.
    SubchannelPicker[] built = build.all(pickerGroups);
    SubchannelPicker[] subsetPickers = new SubchannelPicker[g];
    for (int j = 0; j < g; j++) {
      subsetPickers[j] = plans[j].assemble(built);
    }
    return g == 1
        ? subsetPickers[0]
        : new SplitPicker(subsetPickers, Arrays.copyOf(shares, g), random);
  }

  /** One update's READY endpoints and the factory that builds pickers over groups of them. */
  private record Build(
      PickerFactory factory,
      Object[] keys,
      SubchannelPicker[] pickers,
      int[] weights,
      WeightedPolicyConfig config) {

    SubchannelPicker[] all(PickerGroups groups) {
      return groups.build(factory, keys, pickers, weights, config);
    }

    SubchannelPicker one(PickerGroups.Step step, int[] members) {
      PickerGroups groups = new PickerGroups();
      PickerGroups.Assembly plan = step.plan(groups, members);
      return plan.assemble(all(groups));
    }
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

  /** {@code selector {version=v2}} or {@code selectors {version=v2}, {version=v1}}. */
  static String describe(List<Map<String, String>> selectors) {
    StringBuilder sb = new StringBuilder(selectors.size() == 1 ? "selector " : "selectors ");
    for (int s = 0; s < selectors.size(); s++) {
      sb.append(s == 0 ? "" : ", ").append(selectors.get(s));
    }
    return sb.toString();
  }
}
