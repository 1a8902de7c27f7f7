package io.steelyard.balancer.internal;

import com.google.common.annotations.VisibleForTesting;
import io.grpc.LoadBalancer.FixedResultPicker;
import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.grpc.Status;
import io.steelyard.balancer.spi.EndpointSelection;
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
 * with {@code split}, over each selection, under a {@link SplitPicker} that chooses a selection per
 * call by percentage. Without either, the step within selections runs over every READY endpoint
 * (the balancer skips this class altogether when there is no caller zone either, so a plain pick
 * pays nothing for it). {@link EndpointSelection} states the rules.
 *
 * <p>Order of steps: a split chooses the selection; within it, the step the balancer passes (the
 * zone step, {@link ZoneRouting}, over the selection's endpoints only, when the caller's zone is
 * known) and then the policy's weighted pick. Every group of every selection is built in one {@link
 * PickerFactory#newPickers} call ({@link PickerGroups}). Panic ({@link PanicThreshold#panic})
 * is decided before, over every endpoint.
 *
 * <p>Threading: {@link #newPicker} runs in the balancer's SynchronizationContext; its pickers are
 * immutable and thread-safe.
 */
@NotThreadSafe
final class Selection {

  /** Null in production: split pickers draw from {@code ThreadLocalRandom}. */
  @Nullable private final Random random;

  Selection() {
    this(null);
  }

  /** Split pickers draw from {@code random}, for exact tests. */
  @VisibleForTesting
  Selection(@Nullable Random random) {
    this.random = random;
  }

  /**
   * The step run within each selection, given the selection's selector (null: every endpoint, as under
   * fallback {@code any}): the zone step, or {@link PickerGroups#WHOLE}.
   */
  @FunctionalInterface
  interface Within {
    PickerGroups.Step forSelection(@Nullable Map<String, String> selector);
  }

  /** Picks by the policy alone within each selection. */
  static final Within POLICY_ONLY = selector -> PickerGroups.WHOLE;

  /** As {@link #newPicker(PickerFactory, Object[], SubchannelPicker[], int[],
   * WeightedPolicyConfig, Function, Within)}, picking by the policy alone within each selection. */
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
   * weights}, at least one) that {@code config}'s {@code subset} or {@code split} allows, built by {@code
   * factory} after {@code within}'s step inside each selection; {@code metadata} gives an
   * endpoint's metadata by key (null: none). Without metadata selection, {@code within}'s step
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
    EndpointSelection selection = config.endpointSelection();
    if (selection == null) {
      return build.one(within.forSelection(null), PickerGroups.all(keys.length));
    }
    List<Map<String, String>> selectors = selection.selectors();
    int[][] members = new int[selectors.size()][];
    for (int s = 0; s < members.length; s++) {
      members[s] = matching(selectors.get(s), keys, metadata);
      if (!selection.isSplit() && members[s].length > 0) {
        return build.one(within.forSelection(selectors.get(s)), members[s]);
      }
    }
    if (!selection.isSplit()) {
      return selection.fallbackToAny()
          ? build.one(within.forSelection(null), PickerGroups.all(keys.length))
          : new FixedResultPicker(PickResult.withError(Status.UNAVAILABLE.withDescription(
              "no READY endpoint matches " + describe(selectors) + " (subset fallback: none)")));
    }
    return split(build, selection, members, within);
  }

  private SubchannelPicker split(
      Build build, EndpointSelection selection, int[][] members, Within within) {
    int groups = 0;
    boolean anyShare = false;
    for (int s = 0; s < members.length; s++) {
      if (members[s].length > 0) {
        groups++;
        anyShare |= selection.basisPoints(s) > 0;
      }
    }
    if (groups == 0) {
      return build.one(within.forSelection(null), PickerGroups.all(build.keys.length));
    }
    PickerGroups pickerGroups = new PickerGroups();
    PickerGroups.Assembly[] plans = new PickerGroups.Assembly[groups];
    int[] shares = new int[groups];
    int g = 0;
    for (int s = 0; s < members.length; s++) {
      // A selection with no READY endpoint is left out: its share goes to the others in proportion
      // to theirs, or evenly when theirs are all 0 (the only READY endpoints are never refused).
      int share = anyShare ? selection.basisPoints(s) : 1;
      if (members[s].length > 0 && share > 0) {
        plans[g] = within.forSelection(selection.selectors().get(s)).plan(pickerGroups, members[s]);
        shares[g++] = share;
      }
    }
    // One factory call for every selection's groups: per-endpoint state spans them all.
    SubchannelPicker[] built = build.all(pickerGroups);
    SubchannelPicker[] selectionPickers = new SubchannelPicker[g];
    for (int j = 0; j < g; j++) {
      selectionPickers[j] = plans[j].assemble(built);
    }
    return g == 1
        ? selectionPickers[0]
        : new SplitPicker(selectionPickers, Arrays.copyOf(shares, g), random);
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
      if (EndpointSelection.matches(selector, metadata.apply(keys[i]))) {
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
