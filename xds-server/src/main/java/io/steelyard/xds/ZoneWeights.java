package io.steelyard.xds;

import io.steelyard.balancer.spi.ZoneRoutingConfig;
import io.steelyard.registry.Localities;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.registry.ZoneShares;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.annotation.Nullable;

/**
 * The locality weights of one service's assignment as served to the callers of one zone: the
 * registered weight (times the slow-start factor while an instance ramps) times the share
 * {@link ZoneShares} gives the instance's zone, as integers.
 *
 * <p><b>Zones.</b> For a caller in zone {@code z}, {@code up(k)} is zone {@code k}'s effective
 * weight of instances that take calls (drained ones do not), {@code demand(k)} the number of
 * subscribed nodes naming zone {@code k}, or zone {@code k}'s declared weight while no subscribed
 * node names a zone that has instances. A zone-less caller, a caller whose zone has no instance,
 * a panic (fewer local instances taking calls than {@code minLocalEndpoints}) or {@code enabled:
 * false} gets the zone-blind weights.
 *
 * <p><b>Integers.</b> xDS weights are integers of at least 1. Zone-blind weights without a ramp
 * are the registered weights themselves. Any other weights are each instance's share of the
 * caller's calls, scaled to {@value #UNITS_PER_LOCALITY} units per locality taking calls and
 * rounded, with 1 as the floor (a zone the rule sends nothing keeps weight 1 per locality, so
 * that a client still reaches it while it waits for the next assignment). Each weight is then
 * off by less than one unit and their sum by less than one unit per locality, so any zone's
 * share of the sum is within {@code 2 / }{@value #UNITS_PER_LOCALITY} = 0.2 points of the rule's.
 * Drained instances get weight 1 (they are served {@code DRAINING}: no client picks them).
 *
 * <p>Pure: the same input gives the same weights.
 */
final class ZoneWeights {

  /** Units of the integer scale per locality taking calls; see the class comment. */
  static final int UNITS_PER_LOCALITY = 1000;

  private ZoneWeights() {}

  /**
   * Locality weights of {@code instances}, in their order.
   *
   * @param ramp each instance's slow-start factor in (0, 1], 1 when not ramping
   * @param caller the caller's zone, or null for a zone-less caller
   * @param demand subscribed nodes per zone (zones without any may be absent)
   */
  static int[] weights(
      List<ServiceInstance> instances,
      double[] ramp,
      @Nullable String caller,
      ZoneRoutingConfig config,
      Map<String, Long> demand) {
    int n = instances.size();
    double[] effective = new double[n];
    boolean ramping = false;
    for (int i = 0; i < n; i++) {
      effective[i] = instances.get(i).weight() * ramp[i];
      ramping |= ramp[i] < 1.0 && instances.get(i).weight() > 0;
    }
    ZoneShares shares = caller == null || !config.enabled() ? null : shares(instances, effective, caller, config, demand);
    if (shares == null || !shares.zoneAware()) {
      if (!ramping) {
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
          out[i] = Math.max(1, instances.get(i).weight());
        }
        return out;
      }
      return scaled(instances, effective);
    }
    Map<String, Double> upByZone = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) {
      upByZone.merge(zone(instances.get(i)), effective[i], Double::sum);
    }
    double[] share = new double[n];
    for (int i = 0; i < n; i++) {
      String zone = zone(instances.get(i));
      double zoneUp = upByZone.get(zone);
      share[i] = zoneUp <= 0 ? 0 : shares.fraction(zone) * effective[i] / zoneUp;
    }
    return scaled(instances, share);
  }

  /**
   * The zone shares for {@code caller}, or null when its zone has no instance. Capacity goes to
   * {@link ZoneShares} in thousandths of a weight, so that a ramping instance counts its part.
   */
  @Nullable
  static ZoneShares shares(
      List<ServiceInstance> instances,
      double[] effective,
      String caller,
      ZoneRoutingConfig config,
      Map<String, Long> demand) {
    Map<String, Long> up = new LinkedHashMap<>();
    Map<String, Long> declared = new LinkedHashMap<>();
    Map<String, Long> subscribed = new LinkedHashMap<>();
    int localEndpoints = 0;
    long subscribedTotal = 0;
    for (int i = 0; i < instances.size(); i++) {
      ServiceInstance instance = instances.get(i);
      String zone = zone(instance);
      declared.merge(zone, (long) instance.weight(), Long::sum);
      if (instance.weight() > 0) {
        up.merge(zone, Math.round(effective[i] * 1000), Long::sum);
        if (zone.equals(caller)) {
          localEndpoints++;
        }
      }
      if (!subscribed.containsKey(zone)) {
        long d = Math.max(0, demand.getOrDefault(zone, 0L));
        subscribed.put(zone, d);
        subscribedTotal += d;
      }
    }
    if (!declared.containsKey(caller)) {
      return null;
    }
    return ZoneShares.of(
        caller, up, subscribedTotal > 0 ? subscribed : declared, localEndpoints,
        config.minLocalEndpoints());
  }

  /** {@code share} on the integer scale of the class comment; drained instances get 1. */
  private static int[] scaled(List<ServiceInstance> instances, double[] share) {
    int n = instances.size();
    int taking = 0;
    double sum = 0;
    for (int i = 0; i < n; i++) {
      if (instances.get(i).weight() > 0) {
        taking++;
        sum += Math.max(0, share[i]);
      }
    }
    int[] out = new int[n];
    double units = (double) UNITS_PER_LOCALITY * taking;
    for (int i = 0; i < n; i++) {
      if (instances.get(i).weight() == 0 || sum <= 0) {
        out[i] = 1;
      } else {
        out[i] = (int) Math.max(1, Math.round(Math.max(0, share[i]) / sum * units));
      }
    }
    return out;
  }

  /** The instance's zone: its {@code zone} metadata, empty when absent (as in Java). */
  static String zone(ServiceInstance instance) {
    return Localities.zone(instance.metadata());
  }
}
