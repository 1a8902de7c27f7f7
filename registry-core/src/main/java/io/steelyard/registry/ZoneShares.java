package io.steelyard.registry;

import static java.util.Objects.requireNonNull;

import com.google.common.collect.ImmutableMap;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.annotation.concurrent.Immutable;

/**
 * How a caller in one zone spreads its calls over the zones: the zone-aware routing rule, one
 * pure function from capacity and demand per zone to shares, used by the Java balancers' zone
 * step and by the xDS control plane's per-zone assignments, so the rule means the same in every
 * language ({@code docs/localities.md}).
 *
 * <p>For each zone {@code k}: {@code up(k)} is its share of the capacity that can take calls now,
 * {@code exp(k)} its share of the demand, the calls its callers are expected to make. Then
 *
 * <ul>
 *   <li>the caller's zone {@code z} keeps {@code local = min(1, up(z) / exp(z))} of its calls:
 *       all of them while its capacity carries its share, else the share that capacity carries;
 *   <li>the rest, {@code 1 - local}, spreads over the other zones in proportion to their spare
 *       capacity {@code max(0, up(k) - exp(k))}, or to {@code up(k)} when none has any spare;
 *   <li>the rule does not apply, and calls go to every zone by weight, when the caller's zone has
 *       no capacity registered at all ({@link Outcome#NO_LOCAL_ZONE}), or fewer local endpoints
 *       can take calls than the minimum asked for ({@link Outcome#TOO_FEW_LOCAL}, a panic).
 * </ul>
 *
 * <pre>{@code
 * ZoneShares s = ZoneShares.of("a", Map.of("a", 2L, "b", 4L), Map.of("a", 1L, "b", 1L), 1, 1);
 * s.local();      // 0.666…: zone a carries two thirds of its half
 * s.fraction("b") // 0.333…
 * }</pre>
 */
@Immutable
public final class ZoneShares {

  /** Whether the rule applied, and if not, why. */
  public enum Outcome {
    /** Shares are zone-aware: {@link #local()} and {@link #remote()} hold. */
    ZONE_AWARE,
    /** The caller's zone has no registered capacity at all: route by weight across zones. */
    NO_LOCAL_ZONE,
    /** Fewer local endpoints can take calls than the minimum: route by weight (panic). */
    TOO_FEW_LOCAL,
    /** No zone has capacity that can take calls. */
    NO_CAPACITY
  }

  private final Outcome outcome;
  private final String caller;
  private final double local;
  private final ImmutableMap<String, Double> remote;

  private ZoneShares(
      Outcome outcome, String caller, double local, ImmutableMap<String, Double> remote) {
    this.outcome = outcome;
    this.caller = caller;
    this.local = local;
    this.remote = remote;
  }

  /**
   * The shares for a caller in zone {@code caller}.
   *
   * @param up capacity per zone that can take calls now (e.g. the weight of READY, non-drained
   *     endpoints); zones without any may be absent
   * @param demand demand per zone: calls its callers are expected to make, in any unit (the Java
   *     balancer passes declared capacity, the control plane the subscribed callers per zone);
   *     the caller's zone absent means it has no registered capacity ({@link
   *     Outcome#NO_LOCAL_ZONE}); all zero: each zone's demand is taken to be its {@code up}
   * @param localEndpoints endpoints in the caller's zone that can take calls now
   * @param minLocalEndpoints below it, the rule does not apply ({@link Outcome#TOO_FEW_LOCAL})
   */
  public static ZoneShares of(
      String caller,
      Map<String, Long> up,
      Map<String, Long> demand,
      int localEndpoints,
      int minLocalEndpoints) {
    requireNonNull(caller, "caller");
    if (!demand.containsKey(caller)) {
      return new ZoneShares(Outcome.NO_LOCAL_ZONE, caller, 0, ImmutableMap.of());
    }
    if (localEndpoints < minLocalEndpoints) {
      return new ZoneShares(Outcome.TOO_FEW_LOCAL, caller, 0, ImmutableMap.of());
    }
    long upTotal = 0;
    for (long w : up.values()) {
      upTotal += Math.max(0, w);
    }
    if (upTotal == 0) {
      return new ZoneShares(Outcome.NO_CAPACITY, caller, 0, ImmutableMap.of());
    }
    long demandTotal = 0;
    for (long w : demand.values()) {
      demandTotal += Math.max(0, w);
    }
    long upLocal = Math.max(0, up.getOrDefault(caller, 0L));
    long demandLocal = Math.max(0, demand.get(caller));
    // local = min(1, (upLocal / upTotal) / (demandLocal / demandTotal)), on one denominator.
    double local =
        demandTotal == 0 || demandLocal == 0
            ? 1.0
            : Math.min(1.0, ((double) upLocal * demandTotal) / ((double) demandLocal * upTotal));

    // Spare capacity compared exactly, on the common denominator upTotal × demandTotal: a zone
    // whose capacity matches its demand has no spare, whatever the rounding of the fractions.
    Map<String, Double> capacity = new LinkedHashMap<>();
    Map<String, Double> spare = new LinkedHashMap<>();
    double spareSum = 0;
    double capacitySum = 0;
    for (Map.Entry<String, Long> e : up.entrySet()) {
      if (e.getKey().equals(caller) || e.getValue() <= 0) {
        continue;
      }
      double c = (double) e.getValue() / upTotal;
      capacity.put(e.getKey(), c);
      capacitySum += c;
      long d = Math.max(0, demand.getOrDefault(e.getKey(), 0L));
      long spareNumerator =
          demandTotal == 0 ? 0 : e.getValue() * demandTotal - d * upTotal;
      if (spareNumerator > 0) {
        double s = (double) spareNumerator / ((double) upTotal * demandTotal);
        spare.put(e.getKey(), s);
        spareSum += s;
      }
    }
    Map<String, Double> weights = spareSum > 0 ? spare : capacity;
    double sum = spareSum > 0 ? spareSum : capacitySum;
    ImmutableMap.Builder<String, Double> remote = ImmutableMap.builder();
    if (sum > 0) {
      for (Map.Entry<String, Double> e : weights.entrySet()) {
        remote.put(e.getKey(), e.getValue() / sum);
      }
    } else {
      local = 1.0; // nowhere else to go
    }
    return new ZoneShares(Outcome.ZONE_AWARE, caller, local, remote.buildOrThrow());
  }

  /** Whether the rule applied, and if not, why. */
  public Outcome outcome() {
    return outcome;
  }

  /** Whether calls are spread by zone ({@link Outcome#ZONE_AWARE}). */
  public boolean zoneAware() {
    return outcome == Outcome.ZONE_AWARE;
  }

  /** The caller's zone. */
  public String caller() {
    return caller;
  }

  /** The share of calls that stays in the caller's zone, in [0, 1]; 0 unless zone-aware. */
  public double local() {
    return local;
  }

  /**
   * How the spill, {@code 1 - local()}, divides over the other zones: each zone's part of it,
   * summing to 1, only zones with a part above 0; empty unless zone-aware or when nothing spills
   * anywhere.
   */
  public Map<String, Double> remote() {
    return remote;
  }

  /**
   * The share of all the caller's calls that goes to {@code zone}: {@link #local()} for the
   * caller's own, {@code (1 - local()) × remote(zone)} for another; 0 unless zone-aware.
   */
  public double fraction(String zone) {
    if (!zoneAware()) {
      return 0;
    }
    if (zone.equals(caller)) {
      return local;
    }
    return (1 - local) * remote.getOrDefault(zone, 0.0);
  }

  @Override
  public String toString() {
    return outcome == Outcome.ZONE_AWARE
        ? "ZoneShares{" + caller + " keeps " + local + ", spill " + remote + "}"
        : "ZoneShares{" + caller + ": " + outcome + "}";
  }
}
