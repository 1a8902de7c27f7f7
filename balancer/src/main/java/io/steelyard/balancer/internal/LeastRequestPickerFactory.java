package io.steelyard.balancer.internal;

import static java.util.Objects.requireNonNull;

import com.google.common.annotations.VisibleForTesting;
import com.google.common.base.Ticker;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.steelyard.balancer.spi.LoadAwarePicker;
import io.steelyard.balancer.spi.LoadAwarePickerFactory;
import io.steelyard.balancer.spi.TracerDecorator;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import javax.annotation.Nullable;

/**
 * {@code weighted_least_request}'s picker factory, and the owner of its per-endpoint load: one
 * {@link EndpointLoad} per READY endpoint, keyed by the balancer's child key, handed from picker
 * to picker so that a picker swap (a weight change, another endpoint going READY) keeps every
 * count and average. An endpoint that leaves the READY set loses its load; if it comes back it
 * starts fresh (calls still in flight on the old one finish against the old object, harmlessly).
 *
 * <p><b>Cost of a build.</b> The loads are kept from build to build in one map, changed only
 * where an endpoint arrives or leaves. A build walks the previous build's keys beside the new
 * ones: where the same key (the balancer's child key, the same object from update to update)
 * stands at the same place, or one place further on (an endpoint left), its load is taken with
 * no hashing; only the others are looked up. When another endpoint goes READY, every key but one
 * is found by that walk. Each load also keeps its traced {@code PickResult} while its child's
 * result stays equal ({@link EndpointLoad#traced}), so a build copies no result per endpoint.
 *
 * <p>One per balancer. Threading: {@link #newPicker}, {@link #load} and {@link
 * #reportUtilization} run in the balancer's SynchronizationContext (out-of-band ORCA listeners run
 * there too); the loads themselves are thread-safe.
 *
 * <p>Made by {@link WeightedBalancers#leastRequestPickers}; {@code balancer-orca} gets one with a
 * per-call ORCA decorator and sends out-of-band reports to {@link #reportUtilization}.
 */
final class LeastRequestPickerFactory implements LoadAwarePickerFactory {

  private final Ticker ticker;
  @Nullable private final Random random;
  private final TracerDecorator decorator;

  /** The READY endpoints' loads, by child key. */
  private final Map<Object, EndpointLoad> loads = new HashMap<>();

  /** The last build's keys, every group's one after another, and their loads (parallel). */
  private Object[] lastKeys = new Object[0];

  private EndpointLoad[] lastLoads = new EndpointLoad[0];

  /** Counts builds; each marks the loads it covers, so that the others can be dropped. */
  private int builds;

  /** The production factory: system ticker, {@link java.util.concurrent.ThreadLocalRandom}. */
  LeastRequestPickerFactory() {
    this(TracerDecorator.NONE);
  }

  /** As {@link #LeastRequestPickerFactory()}, with {@code decorator} on every endpoint's tracer. */
  LeastRequestPickerFactory(TracerDecorator decorator) {
    this(Ticker.systemTicker(), null, decorator);
  }

  /** Fake time and a fixed random, for exact tests. */
  @VisibleForTesting
  LeastRequestPickerFactory(Ticker ticker, @Nullable Random random, TracerDecorator decorator) {
    this.ticker = requireNonNull(ticker, "ticker");
    this.random = random;
    this.decorator = requireNonNull(decorator, "decorator");
  }

  /** Without keys (benchmarks): each child picker is its own key, the config the default. */
  @Override
  public SubchannelPicker newPicker(SubchannelPicker[] childPickers, int[] weights) {
    return newPicker(childPickers, childPickers, weights, WeightedPolicyConfig.DEFAULT);
  }

  @Override
  public SubchannelPicker newPicker(
      Object[] endpointKeys,
      SubchannelPicker[] childPickers,
      int[] weights,
      WeightedPolicyConfig config) {
    return newPickers(
        new Object[][] {endpointKeys},
        new SubchannelPicker[][] {childPickers},
        new int[][] {weights},
        config)[0];
  }

  /**
   * One picker per group; the groups together are the READY set, whose loads are kept: an
   * endpoint in several groups (overlapping selections) has one load, shared by their pickers.
   */
  @Override
  public SubchannelPicker[] newPickers(
      Object[][] endpointKeys,
      SubchannelPicker[][] childPickers,
      int[][] weights,
      WeightedPolicyConfig config) {
    return build(endpointKeys, childPickers, weights, config);
  }

  /** As {@link #newPickers}; each picker is its own {@link LoadAwarePicker} side. */
  @Override
  public SubchannelPicker[] newLoadAwarePickers(
      Object[][] endpointKeys,
      SubchannelPicker[][] childPickers,
      int[][] weights,
      WeightedPolicyConfig config,
      LoadAwarePicker[] views) {
    LeastRequestPicker[] pickers = build(endpointKeys, childPickers, weights, config);
    System.arraycopy(pickers, 0, views, 0, pickers.length);
    return pickers;
  }

  private LeastRequestPicker[] build(
      Object[][] endpointKeys,
      SubchannelPicker[][] childPickers,
      int[][] weights,
      WeightedPolicyConfig config) {
    int endpoints = 0;
    for (Object[] group : endpointKeys) {
      endpoints += group.length;
    }
    int mark = ++builds;
    Object[] keys = new Object[endpoints];
    EndpointLoad[] found = new EndpointLoad[endpoints];
    int covered = 0; // distinct endpoints in this build
    int at = 0; // in this build's keys
    int last = 0; // in the last build's keys, where the walk expects the next key
    LeastRequestPicker[] pickers = new LeastRequestPicker[endpointKeys.length];
    for (int g = 0; g < pickers.length; g++) {
      EndpointLoad[] pickerLoads = new EndpointLoad[endpointKeys[g].length];
      for (int i = 0; i < pickerLoads.length; i++) {
        Object key = endpointKeys[g][i];
        EndpointLoad load;
        if (last < lastKeys.length && lastKeys[last] == key) {
          load = lastLoads[last++];
        } else if (last + 1 < lastKeys.length && lastKeys[last + 1] == key) {
          load = lastLoads[last + 1];
          last += 2;
        } else {
          load = loads.get(key);
          if (load == null) {
            load = new EndpointLoad(ticker, config, decorator);
            loads.put(key, load);
          }
        }
        if (load.mark(mark)) {
          covered++;
          load.configure(config);
        }
        keys[at] = key;
        found[at++] = load;
        pickerLoads[i] = load;
      }
      pickers[g] = new LeastRequestPicker(
          childPickers[g], weights[g], pickerLoads, config.choiceCount(), config.latency(), random);
    }
    if (loads.size() > covered) {
      loads.values().removeIf(load -> !load.marked(mark));
    }
    lastKeys = keys;
    lastLoads = found;
    return pickers;
  }

  /**
   * The load of the READY endpoint with child key {@code endpointKey}, or null when it is not
   * READY: where an out-of-band load report for that endpoint goes.
   */
  @Nullable
  EndpointLoad load(Object endpointKey) {
    return loads.get(endpointKey);
  }

  /**
   * The load of the READY endpoint whose addresses are {@code eag}'s (attributes ignored), or
   * null when there is none: where an out-of-band report from a subchannel of {@code eag} goes.
   */
  @Nullable
  EndpointLoad load(EquivalentAddressGroup eag) {
    return loads.get(WeightedLoadBalancer.endpointKey(eag));
  }

  @Override
  public boolean reportUtilization(EquivalentAddressGroup eag, double utilization) {
    EndpointLoad load = load(eag);
    if (load == null) {
      return false;
    }
    load.reportUtilization(utilization);
    return true;
  }
}
