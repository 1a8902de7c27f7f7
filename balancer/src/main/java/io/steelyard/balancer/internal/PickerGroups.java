package io.steelyard.balancer.internal;

import io.grpc.LoadBalancer.SubchannelPicker;
import io.steelyard.balancer.spi.PickerFactory;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.util.ArrayList;
import java.util.List;
import javax.annotation.concurrent.NotThreadSafe;

/**
 * The groups of one update's READY endpoints that the steps before the pick (a split's selections,
 * each selection's zones) want a policy picker over, each as indexes into the update's parallel
 * arrays. {@link #build} asks the {@link PickerFactory} for all of them in one {@link
 * PickerFactory#newPickers} call, so that per-endpoint state ({@code weighted_least_request}'s
 * load) covers every group and is shared where groups overlap, and a group's index stays its
 * place (round robin's positions) from update to update.
 *
 * <p>Threading: one per picker rebuild, in the balancer's SynchronizationContext.
 */
@NotThreadSafe
final class PickerGroups {

  /** How a step turns the pickers built over every group into its own picker. */
  @FunctionalInterface
  interface Assembly {
    SubchannelPicker assemble(SubchannelPicker[] built);
  }

  /**
   * A step within one selection: adds the groups it wants over {@code members} (indexes into the
   * update's arrays) and says how to assemble its picker from them.
   */
  @FunctionalInterface
  interface Step {
    Assembly plan(PickerGroups groups, int[] members);
  }

  /** The step that adds {@code members} as one group and picks by the policy alone. */
  static final Step WHOLE = (groups, members) -> groups.whole(members);

  private final List<int[]> groups = new ArrayList<>();

  /** Adds a group; returns its index in what {@link #build} returns. */
  int add(int[] members) {
    groups.add(members);
    return groups.size() - 1;
  }

  /** Adds {@code members} as one group, whose picker is the assembly's. */
  Assembly whole(int[] members) {
    int index = add(members);
    return built -> built[index];
  }

  /** One picker per group added, built by {@code factory} in one call. */
  SubchannelPicker[] build(
      PickerFactory factory,
      Object[] keys,
      SubchannelPicker[] pickers,
      int[] weights,
      WeightedPolicyConfig config) {
    int n = groups.size();
    Object[][] k = new Object[n][];
    SubchannelPicker[][] p = new SubchannelPicker[n][];
    int[][] w = new int[n][];
    for (int g = 0; g < n; g++) {
      int[] members = groups.get(g);
      k[g] = new Object[members.length];
      p[g] = new SubchannelPicker[members.length];
      w[g] = new int[members.length];
      for (int i = 0; i < members.length; i++) {
        k[g][i] = keys[members[i]];
        p[g][i] = pickers[members[i]];
        w[g][i] = weights[members[i]];
      }
    }
    return factory.newPickers(k, p, w, config);
  }

  /** {@code 0, 1, ..., n - 1}: every endpoint of an update of {@code n}. */
  static int[] all(int n) {
    int[] members = new int[n];
    for (int i = 0; i < n; i++) {
      members[i] = i;
    }
    return members;
  }
}
