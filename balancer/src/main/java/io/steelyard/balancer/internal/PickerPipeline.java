package io.steelyard.balancer.internal;

import static java.util.Objects.requireNonNull;

import com.google.common.annotations.VisibleForTesting;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.steelyard.balancer.spi.EndpointSelection;
import io.steelyard.balancer.spi.LoadAwarePicker;
import io.steelyard.balancer.spi.LoadAwarePickerFactory;
import io.steelyard.balancer.spi.PickerFactory;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import javax.annotation.Nullable;
import javax.annotation.concurrent.NotThreadSafe;

/**
 * The steps from the READY eligible endpoints to a picker, in their one order, and the only
 * place that wires them:
 *
 * <ol>
 *   <li><b>split</b> and <b>selection</b> ({@link Selection}, metadata selection: the {@code
 *       split} and {@code subset} keys): which endpoints each picker covers; a split chooses one
 *       selection per call, by share, through a {@link SplitPicker};
 *   <li><b>zone</b> ({@link ZoneRouting}), when the caller's zone is known: within each
 *       selection, over that selection's endpoints only, the share of calls kept in the caller's
 *       zone and how the rest spreads over the other zones, through a {@link ZonePicker};
 *   <li><b>the policy's pick</b>: the {@link PickerFactory}'s picker over each group so formed (a
 *       selection, or a zone within one), every group of the update built in one {@link
 *       PickerFactory#newPickers} call, so that per-endpoint state ({@code
 *       weighted_least_request}'s load) covers every group and is shared where groups overlap.
 *       When the zone step spills by live load, the call is {@link
 *       LoadAwarePickerFactory#newLoadAwarePickers} on the factory's {@link
 *       PickerFactory#loadAware()} side.
 * </ol>
 *
 * <p>Without metadata selection and a caller zone the pipeline is one {@link
 * PickerFactory#newPicker} call over every READY endpoint, so a plain pick pays nothing for the
 * steps. What comes before the pipeline (which endpoints get a child, eligibility, slow start,
 * the panic threshold) is {@link WeightedLoadBalancer}'s.
 *
 * <pre>{@code
 * PickerPipeline pipeline = new PickerPipeline("weighted_random", factory);
 * pipeline.resolved(declaredWeights, zones, metadata);   // on each non-empty resolution
 * SubchannelPicker picker = pipeline.picker(keys, pickers, weights, scale, config);
 * }</pre>
 *
 * <p>Threading: confined to the balancer's SynchronizationContext; its pickers are immutable and
 * thread-safe.
 */
@NotThreadSafe
final class PickerPipeline {

  private final PickerFactory factory;
  @Nullable private final LoadAwarePickerFactory loadAware;
  private final ZoneRouting zoneRouting;

  /** Null in production: split and zone pickers draw from {@code ThreadLocalRandom}. */
  @Nullable private final Random random;

  /** Declared weight per child key, from the latest non-empty resolution. */
  private Map<Object, Integer> declared = Map.of();

  /** Declared zone per child key ({@code ""} or absent for none). */
  private Map<Object, String> zones = Map.of();

  /** Metadata per child key that has any. */
  private Map<Object, Map<String, String>> metadata = Map.of();

  PickerPipeline(String policyName, PickerFactory factory) {
    this(policyName, factory, null);
  }

  /** Split and zone pickers draw from {@code random}, for exact tests. */
  @VisibleForTesting
  PickerPipeline(String policyName, PickerFactory factory, @Nullable Random random) {
    this.factory = requireNonNull(factory, "factory");
    this.loadAware = factory.loadAware();
    this.zoneRouting = new ZoneRouting(policyName);
    this.random = random;
  }

  /**
   * The endpoints with a child after a non-empty resolution, by child key: their declared weight
   * (the zone step's registered capacity counts them all, READY or not), zone and metadata. The
   * maps are kept, not copied: the caller does not change them afterwards.
   */
  void resolved(
      Map<Object, Integer> declared,
      Map<Object, String> zones,
      Map<Object, Map<String, String>> metadata) {
    this.declared = requireNonNull(declared, "declared");
    this.zones = requireNonNull(zones, "zones");
    this.metadata = requireNonNull(metadata, "metadata");
  }

  /** The caller's zone from the latest resolution's attributes, or null. */
  void resolverZone(@Nullable String zone) {
    zoneRouting.resolverZone(zone);
  }

  /**
   * The picker over the READY endpoints {@code keys} (child keys; parallel to {@code pickers},
   * their pickers, and {@code weights}, their effective weights; at least one), after every step
   * {@code config} asks for.
   *
   * @param scale the factor slow start multiplied every effective weight by (1 without ramps)
   */
  SubchannelPicker picker(
      Object[] keys,
      SubchannelPicker[] pickers,
      int[] weights,
      int scale,
      WeightedPolicyConfig config) {
    EndpointSelection selection = config.endpointSelection();
    boolean zoned = zoneRouting.callerZone(config) != null;
    if (selection == null && !zoned) {
      return factory.newPicker(keys, pickers, weights, config);
    }
    // 1. Split and selection.
    List<Selection.Chosen> chosen = Selection.choose(selection, keys, metadata::get);
    if (chosen == null) {
      return Selection.unavailable(selection);
    }
    // 2. The zone step within each selection; every group a picker is needed over.
    boolean liveLoad = zoned && loadAware != null && config.zoneRouting().spillLoad() > 0;
    String[] zoneOf = zoned ? zonesOf(keys) : null;
    Groups groups = new Groups();
    ZoneRouting.Plan[] plans = new ZoneRouting.Plan[chosen.size()];
    int[] firstGroup = new int[chosen.size()];
    for (int c = 0; c < plans.length; c++) {
      Selection.Chosen s = chosen.get(c);
      plans[c] = zoned
          ? zoneRouting.plan(s.members(), s.selector() == null ? "" : String.valueOf(s.selector()),
              weights, zoneOf, registered(s.selector()), config, scale, liveLoad)
          : null;
      firstGroup[c] = plans[c] == null ? groups.add(s.members()) : groups.add(plans[c]);
    }
    // 3. The policy's pick: one factory call for every group.
    LoadAwarePicker[] views = liveLoad ? new LoadAwarePicker[groups.size()] : null;
    SubchannelPicker[] built = groups.build(keys, pickers, weights, config, views);
    SubchannelPicker[] selectionPickers = new SubchannelPicker[plans.length];
    int[] shares = new int[plans.length];
    for (int c = 0; c < plans.length; c++) {
      selectionPickers[c] = plans[c] == null || plans[c].localOnly()
          ? built[firstGroup[c]]
          : zonePicker(plans[c], firstGroup[c], built, views);
      shares[c] = chosen.get(c).share();
    }
    return selectionPickers.length == 1
        ? selectionPickers[0]
        : new SplitPicker(selectionPickers, shares, random);
  }

  /**
   * The zone picker of {@code plan}, whose local group is {@code first} and whose remote zones'
   * groups follow it, in order.
   */
  private ZonePicker zonePicker(
      ZoneRouting.Plan plan, int first, SubchannelPicker[] built, @Nullable LoadAwarePicker[] views) {
    int zones = plan.remote().length;
    SubchannelPicker[] remote = new SubchannelPicker[zones];
    System.arraycopy(built, first + 1, remote, 0, zones);
    boolean spill = plan.spillLoad() > 0;
    LoadAwarePicker[] liveRemote = null;
    if (spill) {
      liveRemote = new LoadAwarePicker[zones];
      System.arraycopy(views, first + 1, liveRemote, 0, zones);
    }
    return new ZonePicker(built[first], remote, plan.remoteWeights(), plan.localShare(),
        plan.spillLoad(), spill ? views[first] : null, liveRemote, random);
  }

  /** Each READY endpoint's zone, parallel to {@code keys}. */
  private String[] zonesOf(Object[] keys) {
    String[] out = new String[keys.length];
    for (int i = 0; i < keys.length; i++) {
      out[i] = zones.getOrDefault(keys[i], "");
    }
    return out;
  }

  /**
   * Declared weight per zone over every endpoint with a child that {@code selector} matches
   * (null: all of them), READY or not: the zone step's registered capacity of a selection.
   */
  private Map<String, Long> registered(@Nullable Map<String, String> selector) {
    Map<String, Long> registered = new HashMap<>();
    for (Map.Entry<Object, Integer> e : declared.entrySet()) {
      if (selector == null || EndpointSelection.matches(selector, metadata.get(e.getKey()))) {
        registered.merge(zones.getOrDefault(e.getKey(), ""), (long) e.getValue(), Long::sum);
      }
    }
    return registered;
  }

  /**
   * The groups of one update's READY endpoints a policy picker is wanted over, each as indexes
   * into the update's arrays. A group's index stays its place (round robin's positions) from
   * update to update while the steps' outcome does not change.
   */
  private final class Groups {
    private final List<int[]> groups = new ArrayList<>();

    /** Adds {@code members} as one group; returns its index. */
    int add(int[] members) {
      groups.add(members);
      return groups.size() - 1;
    }

    /** Adds the local zone's group, then each remote zone's; returns the local one's index. */
    int add(ZoneRouting.Plan plan) {
      int local = add(plan.local());
      for (int[] remote : plan.remote()) {
        add(remote);
      }
      return local;
    }

    int size() {
      return groups.size();
    }

    /**
     * One picker per group, built in one factory call; with {@code views}, the load-aware call,
     * which fills them.
     */
    SubchannelPicker[] build(
        Object[] keys,
        SubchannelPicker[] pickers,
        int[] weights,
        WeightedPolicyConfig config,
        @Nullable LoadAwarePicker[] views) {
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
      return views == null
          ? factory.newPickers(k, p, w, config)
          : loadAware.newLoadAwarePickers(k, p, w, config, views);
    }
  }
}
