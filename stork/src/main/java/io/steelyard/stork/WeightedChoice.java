package io.steelyard.stork;

import io.smallrye.stork.api.ServiceInstance;
import io.steelyard.balancer.spi.AliasTable;
import io.steelyard.balancer.spi.EffectiveWeights;
import io.steelyard.balancer.spi.SlowStartConfig;
import io.steelyard.balancer.spi.SlowStartWeights;
import io.steelyard.registry.ZoneShares;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.annotation.Nullable;
import javax.annotation.concurrent.Immutable;

/**
 * One immutable weighted pick over a set of instances: each instance's probability is its zone's
 * share ({@link ZoneShares}, the one zone formula of the balancer and the xDS control plane)
 * times its part of its zone's weight, the weights being the balancer's ({@link
 * EffectiveWeights}: drained instances are left out unless every one is drained; {@link
 * SlowStartWeights} while ramps run). The probabilities go into one {@link AliasTable}: a pick is
 * one random {@code long}, two array reads, no lock and no allocation.
 */
@Immutable
final class WeightedChoice {

  /** No ramp runs: good until the instances change. */
  static final long NEVER = Long.MAX_VALUE;

  /** Probabilities become alias-table weights on this scale (2^30: below 1e-9 of rounding). */
  private static final double PROBABILITY_SCALE = 0x1p30;

  private final ServiceInstance[] instances;
  private final long[] table;
  private final long refreshAtNanos;
  private final ZoneShares.Outcome zoneOutcome;

  private WeightedChoice(
      ServiceInstance[] instances, long[] table, long refreshAtNanos, ZoneShares.Outcome zoneOutcome) {
    this.instances = instances;
    this.table = table;
    this.refreshAtNanos = refreshAtNanos;
    this.zoneOutcome = zoneOutcome;
  }

  /**
   * The choice over {@code instances} with their {@code declared} weights, {@code zones} ({@code
   * ""}: none) and ramp starts ({@link SlowStartWeights#NOT_RAMPING}: not ramping), all parallel.
   *
   * @param demand declared weight per zone over every registered instance, those that cannot
   *     take calls now included (a zone whose instances are not all among {@code instances} then
   *     carries less than its share, and spills); null: over {@code instances}
   * @param eligibility the balancer's eligibility rule, one caller at a time (it logs once)
   * @param slowStart null: slow start off
   * @param callerZone null: zone-blind
   */
  static WeightedChoice of(
      ServiceInstance[] instances, int[] declared, String[] zones, long[] rampStartNanos,
      @Nullable Map<String, Long> demand, EffectiveWeights eligibility,
      @Nullable SlowStartConfig slowStart, @Nullable String callerZone, int minLocalEndpoints,
      long nowNanos) {
    int n = instances.length;
    int[] weights = eligibility.compute(declared);
    long refreshAt = NEVER;
    if (slowStart != null && SlowStartWeights.ramping(slowStart, weights, rampStartNanos, nowNanos)) {
      SlowStartWeights.apply(slowStart, weights, rampStartNanos, nowNanos);
      refreshAt = nowNanos + SlowStartWeights.refreshDelayNanos(slowStart);
    }
    double[] probability = new double[n];
    ZoneShares.Outcome outcome = ZoneShares.Outcome.NO_LOCAL_ZONE;
    ZoneShares shares = null;
    Map<String, Long> up = new LinkedHashMap<>();
    if (callerZone != null) {
      // Demand is declared capacity (callers assumed spread as capacity is, as the balancer
      // does); up is what can take calls now, ramps included.
      Map<String, Long> expected = demand != null ? demand : demandOf(declared, zones);
      int local = 0;
      for (int i = 0; i < n; i++) {
        if (weights[i] > 0) {
          up.merge(zones[i], (long) weights[i], Long::sum);
          if (zones[i].equals(callerZone)) {
            local++;
          }
        }
      }
      shares = ZoneShares.of(callerZone, up, expected, local, minLocalEndpoints);
      outcome = shares.outcome();
    }
    double total = 0;
    for (int w : weights) {
      total += w;
    }
    for (int i = 0; i < n; i++) {
      if (weights[i] <= 0) {
        continue;
      }
      probability[i] = shares != null && shares.zoneAware()
          ? shares.fraction(zones[i]) * weights[i] / up.get(zones[i])
          : weights[i] / total;
    }
    int eligible = 0;
    for (double p : probability) {
      if (p > 0) {
        eligible++;
      }
    }
    ServiceInstance[] chosen = new ServiceInstance[eligible];
    int[] tableWeights = new int[eligible];
    int j = 0;
    for (int i = 0; i < n; i++) {
      if (probability[i] > 0) {
        chosen[j] = instances[i];
        tableWeights[j] = (int) Math.max(1, Math.round(probability[i] * PROBABILITY_SCALE));
        j++;
      }
    }
    return new WeightedChoice(chosen, AliasTable.of(tableWeights), refreshAt, outcome);
  }

  /** Declared weight per zone ({@code declared} and {@code zones} parallel). */
  static Map<String, Long> demandOf(int[] declared, String[] zones) {
    Map<String, Long> demand = new LinkedHashMap<>();
    for (int i = 0; i < declared.length; i++) {
      demand.merge(zones[i], (long) declared[i], Long::sum);
    }
    return demand;
  }

  /** The instance the 64 random bits {@code random} pick; null when there is none. */
  @Nullable
  ServiceInstance pick(long random) {
    return instances.length == 0 ? null : instances[AliasTable.sample(table, random)];
  }

  /** When ramps have moved on enough to build the choice again; {@link #NEVER} without ramps. */
  long refreshAtNanos() {
    return refreshAtNanos;
  }

  /** How the zone rule applied ({@link ZoneShares.Outcome#NO_LOCAL_ZONE} when zone-blind). */
  ZoneShares.Outcome zoneOutcome() {
    return zoneOutcome;
  }
}
