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
import java.util.Collections;
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
 * <p>One per balancer. Threading: {@link #newPicker} and {@link #load} run in the balancer's
 * SynchronizationContext; the loads themselves are thread-safe.
 *
 * <p>Made by {@link WeightedBalancers#leastRequestPickers}; {@code balancer-orca} gets one with a
 * per-call ORCA decorator and sends out-of-band reports to {@link #reportUtilization}.
 */
final class LeastRequestPickerFactory implements LoadAwarePickerFactory {

  private final Ticker ticker;
  @Nullable private final Random random;
  private final TracerDecorator decorator;

  /**
   * The current READY endpoints' loads. Each picker build makes a new map and publishes it here
   * without a copy: it is never changed after this write, so readers on other threads (out-of-band
   * load reports) see it whole.
   */
  private volatile Map<Object, EndpointLoad> loads = Map.of();

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
    Map<Object, EndpointLoad> previous = loads;
    Map<Object, EndpointLoad> next = new HashMap<>();
    LeastRequestPicker[] pickers = new LeastRequestPicker[endpointKeys.length];
    for (int g = 0; g < pickers.length; g++) {
      EndpointLoad[] pickerLoads = new EndpointLoad[endpointKeys[g].length];
      for (int i = 0; i < pickerLoads.length; i++) {
        pickerLoads[i] = next.computeIfAbsent(endpointKeys[g][i], key -> {
          EndpointLoad load = previous.get(key);
          if (load == null) {
            return new EndpointLoad(ticker, config, decorator);
          }
          load.configure(config);
          return load;
        });
      }
      pickers[g] = new LeastRequestPicker(
          childPickers[g], weights[g], pickerLoads, config.choiceCount(), config.latency(), random);
    }
    loads = Collections.unmodifiableMap(next);
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
