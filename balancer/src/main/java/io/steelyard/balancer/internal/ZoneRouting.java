package io.steelyard.balancer.internal;

import static java.util.Objects.requireNonNull;

import io.steelyard.balancer.spi.PickerFactory;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import io.steelyard.balancer.spi.ZoneRoutingConfig;
import io.steelyard.registry.ZoneShares;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.annotation.Nullable;
import javax.annotation.concurrent.NotThreadSafe;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The zone step between the endpoints a balancer may pick and the policy's weighted pick: with
 * the caller in zone {@code z}, it decides which share of calls stays in {@code z} and how the
 * rest spreads over the other zones, a {@link Plan} that {@link PickerPipeline} turns into a
 * {@link ZonePicker} over one policy picker per zone. The same step serves every weighted
 * policy.
 *
 * <p><b>The formula</b> (Envoy's zone-aware routing, with registered weights where Envoy counts
 * hosts), computed by {@link ZoneShares}, the one implementation the xDS control plane shares. For
 * each zone {@code k}: {@code up(k)} = the effective weight of its READY endpoints over that of
 * every READY endpoint; {@code exp(k)} = its declared weight over the declared
 * weight of every endpoint the balancer has (READY or not): the share of calls its callers are
 * assumed to make, callers being spread like the capacity registered. Then
 *
 * <ul>
 *   <li>the caller's zone keeps {@code local = min(1, up(z) / exp(z))} of its calls: all of them
 *       while its READY capacity carries its share, else the share that capacity carries;
 *   <li>the rest, {@code 1 - local}, spreads over the other zones in proportion to their spare
 *       capacity {@code max(0, up(k) - exp(k))}, or to {@code up(k)} when none has any spare;
 *   <li>a load-aware policy ({@link PickerFactory#loadAware()}: {@code weighted_least_request})
 *       also spills by live load: when the local candidate the policy chose is full, its {@link
 *       io.steelyard.balancer.spi.LoadAwarePicker#loadScore} ({@code (outstanding + 1) × penalty
 *       / weight}) above {@code spillLoad}, the call goes to one candidate of a zone chosen as
 *       above if that one's {@link io.steelyard.balancer.spi.LoadAwarePicker#rankScore} ({@code
 *       (outstanding + 1) × penalty / weight + errorCost}) is lower than the local one's;
 *   <li><b>panic</b>: fewer READY local endpoints than {@code minLocalEndpoints}: route to every
 *       zone by weight, zone-blind, and log it at INFO;
 *   <li>no endpoint in the caller's zone at all, READY or not (a canary selection with no server
 *       there): route to every zone by weight, logged at DEBUG only, as it is not a failure.
 * </ul>
 *
 * Under metadata selection ({@code subset} or {@code split}, {@link Selection}) the step runs
 * once per selection ({@link #plan}), over that selection's endpoints only: {@code up}, {@code
 * exp} and the local endpoint count are the selection's.
 *
 * <p>An endpoint without zone metadata is in the empty zone {@code ""}. Without a caller zone, or
 * with {@code zoneRouting.enabled: false}, the step does not run ({@link #callerZone} is null)
 * and the policy picks zone-blind.
 *
 * <p>Threading: confined to the balancer's SynchronizationContext.
 */
@NotThreadSafe
final class ZoneRouting {

  private static final Logger logger = LoggerFactory.getLogger(ZoneRouting.class);

  /** Residual shares become alias-table weights on this scale. */
  private static final int SHARE_SCALE = 1 << 20;

  private final String policyName;

  /** The resolver's caller zone, or null. */
  @Nullable private String resolverZone;

  /**
   * The scopes (every endpoint: {@code ""}, or a selection) whose last picker routed to every
   * zone because too few local endpoints were READY: each change is logged once.
   */
  private final Set<String> localPanic = new HashSet<>();

  ZoneRouting(String policyName) {
    this.policyName = requireNonNull(policyName, "policyName");
  }

  /**
   * What the zone step decided for one scope: a policy picker over the {@code local} endpoints
   * and one over each of the {@code remote} zones' (indexes into the update's arrays), the share
   * of calls kept local and the remote zones' weights; with {@code spillLoad > 0}, the live-load
   * spill on the policy's {@link io.steelyard.balancer.spi.LoadAwarePicker}s. {@code remote}
   * empty and no spill: the local picker alone serves every call.
   */
  record Plan(int[] local, int[][] remote, int[] remoteWeights, double localShare, double spillLoad) {

    /** Whether the local zone's own picker is the whole answer. */
    boolean localOnly() {
      return remote.length == 0 && spillLoad == 0;
    }
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
   * The zone step over the READY endpoints {@code members} (indexes into {@code weights} and
   * {@code zones}, the update's parallel arrays), or null when zone routing does not apply to
   * them (no caller zone, local panic, every member local) and the policy picks over {@code
   * members} zone-blind.
   *
   * @param scope what {@code members} are, for the log ({@code ""}: every endpoint)
   * @param registered declared weight per zone over every endpoint of the scope with a child
   * @param scale the factor slow start multiplied every effective weight by (1 without ramps)
   * @param liveLoad whether the policy's pickers are load-aware, so the plan may spill by load
   */
  @Nullable
  Plan plan(
      int[] members,
      String scope,
      int[] weights,
      String[] zones,
      Map<String, Long> registered,
      WeightedPolicyConfig config,
      int scale,
      boolean liveLoad) {
    String caller = callerZone(config);
    if (caller == null) {
      return null;
    }
    ZoneRoutingConfig zr = config.zoneRouting();
    Map<String, List<Integer>> byZone = new LinkedHashMap<>();
    Map<String, Long> up = new LinkedHashMap<>();
    for (int i : members) {
      byZone.computeIfAbsent(zones[i], z -> new ArrayList<>()).add(i);
      up.merge(zones[i], (long) weights[i], Long::sum);
    }
    List<Integer> local = byZone.remove(caller);
    int localCount = local == null ? 0 : local.size();
    String where = scope.isEmpty() ? "" : " (" + scope + ")";
    ZoneShares shares = ZoneShares.of(caller, up, registered, localCount, zr.minLocalEndpoints());
    if (shares.outcome() == ZoneShares.Outcome.NO_LOCAL_ZONE) {
      // Not a panic: the scope (e.g. a canary selection) has no server in the caller's zone at all.
      logger.debug("{}: zone {}{} has no endpoint; routing by weight across zones", policyName,
          caller, where);
      return null;
    }
    if (shares.outcome() == ZoneShares.Outcome.TOO_FEW_LOCAL) {
      if (localPanic.add(scope)) {
        // INFO, not WARN: also what every channel sees for a moment while it connects, when a
        // server of another zone is READY first.
        logger.info(
            "{}: zone {}{} has {} READY endpoints, below minLocalEndpoints {}; routing to every zone",
            policyName, caller, where, localCount, zr.minLocalEndpoints());
      }
      return null;
    }
    if (localPanic.remove(scope)) {
      logger.info("{}: zone {}{} has {} READY endpoints again; routing by zone", policyName, caller,
          where, localCount);
    }
    if (byZone.isEmpty() || !shares.zoneAware()) {
      return null; // every READY endpoint is local: the zone-blind picker is the local one
    }
    double localShare = shares.local();
    boolean spill = liveLoad && zr.spillLoad() > 0;
    if (localShare >= 1.0 && !spill) {
      return new Plan(toArray(local), new int[0][], new int[0], 1.0, 0);
    }
    int[][] remote = new int[shares.remote().size()][];
    double[] shareWeights = new double[remote.length];
    double max = 0;
    int k = 0;
    for (Map.Entry<String, Double> e : shares.remote().entrySet()) {
      remote[k] = toArray(byZone.get(e.getKey()));
      shareWeights[k] = e.getValue();
      max = Math.max(max, e.getValue());
      k++;
    }
    int[] zoneWeights = new int[remote.length];
    for (k = 0; k < zoneWeights.length; k++) {
      zoneWeights[k] = (int) Math.max(1, Math.round(shareWeights[k] / max * SHARE_SCALE));
    }
    return new Plan(toArray(local), remote, zoneWeights, localShare,
        spill ? zr.spillLoad() / scale : 0);
  }

  private static int[] toArray(List<Integer> indexes) {
    int[] out = new int[indexes.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = indexes.get(i);
    }
    return out;
  }
}
