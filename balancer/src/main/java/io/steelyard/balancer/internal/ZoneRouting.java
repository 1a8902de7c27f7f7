package io.steelyard.balancer.internal;

import static java.util.Objects.requireNonNull;

import com.google.common.annotations.VisibleForTesting;
import io.grpc.LoadBalancer.SubchannelPicker;
import io.steelyard.balancer.spi.PickerFactory;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import io.steelyard.balancer.spi.ZoneRoutingConfig;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import javax.annotation.Nullable;
import javax.annotation.concurrent.NotThreadSafe;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The zone step between the endpoints a balancer may pick and the policy's weighted pick: with
 * the caller in zone {@code z}, it decides which share of calls stays in {@code z} and how the
 * rest spreads over the other zones, and builds a {@link ZonePicker} over one policy picker per
 * zone. The same step serves every weighted policy.
 *
 * <p><b>The formula</b> (Envoy's zone-aware routing, with registered weights where Envoy counts
 * hosts). For each zone {@code k}: {@code up(k)} = the effective weight of its READY endpoints
 * over that of every READY endpoint; {@code exp(k)} = its declared weight over the declared
 * weight of every endpoint the balancer has (READY or not): the share of calls its callers are
 * assumed to make, callers being spread like the capacity registered. Then
 *
 * <ul>
 *   <li>the caller's zone keeps {@code local = min(1, up(z) / exp(z))} of its calls: all of them
 *       while its READY capacity carries its share, else the share that capacity carries;
 *   <li>the rest, {@code 1 - local}, spreads over the other zones in proportion to their spare
 *       capacity {@code max(0, up(k) - exp(k))}, or to {@code up(k)} when none has any spare;
 *   <li>{@code weighted_least_request} also spills by live load: when the local candidate the
 *       policy chose is full, {@code (outstanding + 1) × penalty / weight > spillLoad}, the call
 *       goes to one candidate of a zone chosen as above if that one's score is lower;
 *   <li><b>panic</b>: fewer READY local endpoints than {@code minLocalEndpoints}, or none with
 *       weight, route to every zone by weight, zone-blind.
 * </ul>
 *
 * An endpoint without zone metadata is in the empty zone {@code ""}. Without a caller zone, or
 * with {@code zoneRouting.enabled: false}, {@link #picker} returns null and the balancer builds
 * the zone-blind picker exactly as before.
 *
 * <p>Threading: confined to the balancer's SynchronizationContext; its pickers are immutable.
 */
@NotThreadSafe
final class ZoneRouting {

  private static final Logger logger = LoggerFactory.getLogger(ZoneRouting.class);

  /** Residual shares become alias-table weights on this scale. */
  private static final int SHARE_SCALE = 1 << 20;

  private final String policyName;
  @Nullable private final Random random;

  /** The resolver's caller zone, or null. */
  @Nullable private String resolverZone;

  /** Whether the last picker routed to every zone because too few local endpoints were READY. */
  private boolean localPanic;

  ZoneRouting(String policyName) {
    this(policyName, null);
  }

  /** Picks draw from {@code random}, for exact tests; null: {@code ThreadLocalRandom}. */
  @VisibleForTesting
  ZoneRouting(String policyName, @Nullable Random random) {
    this.policyName = requireNonNull(policyName, "policyName");
    this.random = random;
  }

  /** The caller's zone from the latest resolution's attributes, or null. */
  void resolverZone(@Nullable String zone) {
    this.resolverZone = zone == null || zone.isEmpty() ? null : zone;
  }

  /** The caller's zone under {@code config}: the config's own, else the resolver's, else null. */
  @Nullable
  String callerZone(WeightedPolicyConfig config) {
    ZoneRoutingConfig zr = config.zoneRouting();
    if (!zr.enabled()) {
      return null;
    }
    return zr.zone() != null ? zr.zone() : resolverZone;
  }

  /**
   * The picker over the READY endpoints ({@code keys}, {@code pickers}, {@code weights}, {@code
   * zones} parallel), or null when zone routing does not apply and the caller builds the
   * zone-blind picker itself.
   *
   * @param registered declared weight per zone over every endpoint with a child
   * @param scale the factor slow start multiplied every effective weight by (1 without ramps)
   */
  @Nullable
  SubchannelPicker picker(
      PickerFactory factory,
      Object[] keys,
      SubchannelPicker[] pickers,
      int[] weights,
      String[] zones,
      Map<String, Long> registered,
      WeightedPolicyConfig config,
      int scale) {
    String caller = callerZone(config);
    if (caller == null) {
      return null;
    }
    ZoneRoutingConfig zr = config.zoneRouting();
    Map<String, List<Integer>> byZone = new LinkedHashMap<>();
    long total = 0;
    for (int i = 0; i < keys.length; i++) {
      byZone.computeIfAbsent(zones[i], z -> new ArrayList<>()).add(i);
      total += weights[i];
    }
    List<Integer> local = byZone.remove(caller);
    int localCount = local == null ? 0 : local.size();
    if (localCount < zr.minLocalEndpoints()) {
      if (!localPanic) {
        // INFO, not WARN: also what every channel sees for a moment while it connects, when a
        // server of another zone is READY first.
        logger.info(
            "{}: zone {} has {} READY endpoints, below minLocalEndpoints {}; routing to every zone",
            policyName, caller, localCount, zr.minLocalEndpoints());
        localPanic = true;
      }
      return null;
    }
    if (localPanic) {
      logger.info("{}: zone {} has {} READY endpoints again; routing by zone", policyName, caller,
          localCount);
      localPanic = false;
    }
    if (byZone.isEmpty()) {
      return null; // every READY endpoint is local: the zone-blind picker is the local one
    }
    long localWeight = sum(weights, local);
    long registeredTotal = 0;
    for (long w : registered.values()) {
      registeredTotal += w;
    }
    double up = (double) localWeight / total;
    double expected =
        registeredTotal == 0 ? up : (double) registered.getOrDefault(caller, 0L) / registeredTotal;
    double localShare = expected <= 0 ? 1.0 : Math.min(1.0, up / expected);

    String[] remoteZones = byZone.keySet().toArray(new String[0]);
    double[] spare = new double[remoteZones.length];
    double[] capacity = new double[remoteZones.length];
    double spareSum = 0;
    for (int k = 0; k < remoteZones.length; k++) {
      capacity[k] = (double) sum(weights, byZone.get(remoteZones[k])) / total;
      double exp =
          registeredTotal == 0
              ? capacity[k]
              : (double) registered.getOrDefault(remoteZones[k], 0L) / registeredTotal;
      spare[k] = Math.max(0, capacity[k] - exp);
      spareSum += spare[k];
    }
    double[] share = spareSum > 1e-9 ? spare : capacity;

    boolean liveLoad = zr.spillLoad() > 0 && factory instanceof LeastRequestPickerFactory;
    if (localShare >= 1.0 && !liveLoad) {
      return build(factory, keys, pickers, weights, List.of(local), config)[0];
    }
    List<List<Integer>> groups = new ArrayList<>();
    groups.add(local);
    List<Double> shareWeights = new ArrayList<>();
    for (int k = 0; k < remoteZones.length; k++) {
      if (share[k] > 0) {
        groups.add(byZone.get(remoteZones[k]));
        shareWeights.add(share[k]);
      }
    }
    SubchannelPicker[] built = build(factory, keys, pickers, weights, groups, config);
    double max = 0;
    for (double s : shareWeights) {
      max = Math.max(max, s);
    }
    int[] zoneWeights = new int[shareWeights.size()];
    for (int k = 0; k < zoneWeights.length; k++) {
      zoneWeights[k] = (int) Math.max(1, Math.round(shareWeights.get(k) / max * SHARE_SCALE));
    }
    return new ZonePicker(
        built[0],
        Arrays.copyOfRange(built, 1, built.length),
        zoneWeights,
        localShare,
        liveLoad ? zr.spillLoad() / scale : 0,
        random);
  }

  private static SubchannelPicker[] build(
      PickerFactory factory,
      Object[] keys,
      SubchannelPicker[] pickers,
      int[] weights,
      List<List<Integer>> groups,
      WeightedPolicyConfig config) {
    int g = groups.size();
    Object[][] k = new Object[g][];
    SubchannelPicker[][] p = new SubchannelPicker[g][];
    int[][] w = new int[g][];
    for (int j = 0; j < g; j++) {
      List<Integer> group = groups.get(j);
      k[j] = new Object[group.size()];
      p[j] = new SubchannelPicker[group.size()];
      w[j] = new int[group.size()];
      for (int i = 0; i < group.size(); i++) {
        int index = group.get(i);
        k[j][i] = keys[index];
        p[j][i] = pickers[index];
        w[j][i] = weights[index];
      }
    }
    return factory.newPickers(k, p, w, config);
  }

  private static long sum(int[] weights, List<Integer> indexes) {
    long s = 0;
    for (int i : indexes) {
      s += weights[i];
    }
    return s;
  }
}
