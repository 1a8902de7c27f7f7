package io.steelyard.balancer.internal;

import io.grpc.LoadBalancer.FixedResultPicker;
import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.grpc.Status;
import io.steelyard.balancer.spi.EndpointSelection;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import javax.annotation.Nullable;

/**
 * The metadata selection step, between the READY endpoints and the zone step: which of them each
 * picker covers. With {@code subset} in the config, the endpoints the first matching selector
 * chooses (or all, or none and a failing picker, by the fallback); with {@code split}, those of
 * each selector that has a READY endpoint, each with its share of the calls; without either,
 * every READY endpoint. {@link EndpointSelection} states the rules; {@link PickerPipeline} runs
 * this step and those after it.
 *
 * <p>Stateless; called in the balancer's SynchronizationContext.
 */
final class Selection {

  private Selection() {}

  /**
   * One selection a picker covers: its {@code selector} (null: every READY endpoint), its {@code
   * members} (indexes into the update's arrays, in order, at least one) and, under a split, its
   * {@code share} of the calls (basis points, or 1 each when every share is 0).
   */
  record Chosen(@Nullable Map<String, String> selector, int[] members, int share) {}

  /**
   * The selections over the READY endpoints {@code keys} that {@code selection} (null: none)
   * allows, at least one; more than one only under a split. Null when calls must fail: a {@code
   * subset} with fallback {@code none} and no READY match ({@link #unavailable}). {@code
   * metadata} gives an endpoint's metadata by key (null: none).
   */
  @Nullable
  static List<Chosen> choose(
      @Nullable EndpointSelection selection,
      Object[] keys,
      Function<Object, Map<String, String>> metadata) {
    if (selection == null) {
      return List.of(new Chosen(null, all(keys.length), 1));
    }
    List<Map<String, String>> selectors = selection.selectors();
    int[][] members = new int[selectors.size()][];
    for (int s = 0; s < members.length; s++) {
      members[s] = matching(selectors.get(s), keys, metadata);
      if (!selection.isSplit() && members[s].length > 0) {
        return List.of(new Chosen(selectors.get(s), members[s], 1));
      }
    }
    if (!selection.isSplit()) {
      return selection.fallbackToAny() ? List.of(new Chosen(null, all(keys.length), 1)) : null;
    }
    boolean anyShare = false;
    for (int s = 0; s < members.length; s++) {
      anyShare |= members[s].length > 0 && selection.basisPoints(s) > 0;
    }
    List<Chosen> chosen = new ArrayList<>(members.length);
    for (int s = 0; s < members.length; s++) {
      // A selection with no READY endpoint is left out: its share goes to the others in
      // proportion to theirs, or evenly when theirs are all 0 (the only READY endpoints are never
      // refused).
      int share = anyShare ? selection.basisPoints(s) : 1;
      if (members[s].length > 0 && share > 0) {
        chosen.add(new Chosen(selectors.get(s), members[s], share));
      }
    }
    return chosen.isEmpty() ? List.of(new Chosen(null, all(keys.length), 1)) : chosen;
  }

  /** The picker of a {@code subset} whose selectors match no READY endpoint, fallback {@code none}. */
  static SubchannelPicker unavailable(EndpointSelection selection) {
    return new FixedResultPicker(PickResult.withError(Status.UNAVAILABLE.withDescription(
        "no READY endpoint matches " + describe(selection.selectors())
            + " (subset fallback: none)")));
  }

  /** {@code 0, 1, ..., n - 1}: every endpoint of an update of {@code n}. */
  static int[] all(int n) {
    int[] members = new int[n];
    for (int i = 0; i < n; i++) {
      members[i] = i;
    }
    return members;
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
