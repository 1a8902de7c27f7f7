package io.steelyard.stork;

import static java.util.Objects.requireNonNull;

import io.smallrye.stork.api.LoadBalancer;
import io.smallrye.stork.api.NoServiceInstanceFoundException;
import io.smallrye.stork.api.ServiceDiscovery;
import io.smallrye.stork.api.ServiceInstance;
import io.steelyard.balancer.spi.EffectiveWeights;
import io.steelyard.balancer.spi.SlowStartConfig;
import io.steelyard.balancer.spi.SlowStartWeights;
import io.steelyard.registry.Validation;
import io.steelyard.registry.ZoneShares;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Stork load balancer {@code steelyard-weighted}: picks in proportion to the registered weight,
 * never a drained instance (weight 0) while another can take calls, keeps calls in the caller's
 * zone by the shared zone formula, and ramps instances that appear (or come back from a drain)
 * over the slow-start window when one is configured; see {@link WeightedChoice}.
 *
 * <p><b>Whose word counts.</b> Over the {@code steelyard} discovery, each candidate Stork hands in
 * is judged by the discovery's current view, by host and port: its weight and zone now, and
 * whether etcd still has it at all. Quarkus's gRPC clients hand in the list of their last name
 * resolution (which they refresh only when a connection fails) or of a periodic refresh, so a
 * weight change, a drain or a deregistration reaches their picks as soon as the watch delivers
 * it, not at the next resolution. A candidate etcd no longer has is not picked while another one
 * is. Over any other discovery, weights and zones are read from the instances' labels ({@code
 * weight}, default 1) and picks are zone-blind.
 *
 * <p><b>Threading.</b> Non-blocking, as Stork requires, and thread-safe: a pick reads an
 * immutable {@link WeightedChoice} and draws from {@link ThreadLocalRandom}; a new choice is
 * built, under a short lock with no I/O, only when the view or the candidates changed or a ramp
 * moved on. Over the discovery's own list (the REST client's path) a pick allocates nothing;
 * over another collection (a gRPC client's cached list) it also reads every candidate's id once,
 * to know whether the candidates are still those the choice was built for.
 */
final class SteelyardLoadBalancer implements LoadBalancer {

  private static final Logger logger = LoggerFactory.getLogger(SteelyardLoadBalancer.class);

  /**
   * A choice and what it was built from: the view (or, without one, the candidate collection)
   * and a fingerprint of the candidates' ids.
   */
  private record Built(Object source, long fingerprint, WeightedChoice choice) {}

  @Nullable private final SteelyardServiceDiscovery discovery;
  private final String name;
  @Nullable private final SlowStartConfig slowStart;
  private final boolean zoneRouting;
  private final int minLocalEndpoints;
  private final LongSupplier nanoTime;
  /** Guarded by this: the eligibility rule logs once per all-drained episode. */
  private final EffectiveWeights eligibility;
  /** Guarded by this: the last zone outcome, to log a panic's start and end once. */
  private ZoneShares.Outcome lastOutcome = ZoneShares.Outcome.ZONE_AWARE;

  /** The choice over the discovery's whole list. */
  private final AtomicReference<Built> whole = new AtomicReference<>();
  /** The choice over the last other candidate collection. */
  private final AtomicReference<Built> subset = new AtomicReference<>();

  SteelyardLoadBalancer(
      String name, ServiceDiscovery discovery, @Nullable SlowStartConfig slowStart,
      boolean zoneRouting, int minLocalEndpoints, LongSupplier nanoTime) {
    this.name = requireNonNull(name, "name");
    this.discovery = discovery instanceof SteelyardServiceDiscovery s ? s : null;
    this.slowStart = slowStart;
    this.zoneRouting = zoneRouting;
    this.minLocalEndpoints = minLocalEndpoints;
    this.nanoTime = requireNonNull(nanoTime, "nanoTime");
    this.eligibility = new EffectiveWeights(name);
  }

  @Override
  public ServiceInstance selectServiceInstance(Collection<ServiceInstance> candidates) {
    if (candidates.isEmpty()) {
      throw new NoServiceInstanceFoundException("steelyard-weighted " + name + ": no instance to pick from");
    }
    WeightedChoice choice = choice(candidates);
    ServiceInstance picked = choice.pick(ThreadLocalRandom.current().nextLong());
    if (picked == null) {
      throw new NoServiceInstanceFoundException("steelyard-weighted " + name + ": no instance to pick from");
    }
    return picked;
  }

  /** Picks record nothing, so Stork need not serialise them. */
  @Override
  public boolean requiresStrictRecording() {
    return false;
  }

  WeightedChoice choice(Collection<ServiceInstance> candidates) {
    InstanceView view = discovery == null ? null : discovery.view();
    if (view != null && candidates == view.instances()) {
      Built b = whole.get();
      if (b != null && b.source == view && fresh(b.choice)) {
        return b.choice;
      }
      return rebuild(whole, view, 0, candidates);
    }
    // Another collection (a client's cached list, or another discovery's): reused while the view
    // and the candidates' ids are the same, so a steady client pays one pass over its ids.
    long fingerprint = fingerprint(candidates);
    Object source = view != null && view.listed() ? view : candidates;
    Built b = subset.get();
    if (b != null && b.source == source && b.fingerprint == fingerprint && fresh(b.choice)) {
      return b.choice;
    }
    return rebuild(subset, source, fingerprint, candidates);
  }

  /** An order-independent digest of the candidates' ids and their number. */
  private static long fingerprint(Collection<ServiceInstance> candidates) {
    long sum = candidates.size();
    for (ServiceInstance c : candidates) {
      long h = c.getId() * 0x9E3779B97F4A7C15L;
      sum += h ^ (h >>> 29);
    }
    return sum;
  }

  private boolean fresh(WeightedChoice c) {
    return c.refreshAtNanos() == WeightedChoice.NEVER || nanoTime.getAsLong() < c.refreshAtNanos();
  }

  /**
   * The view index of each candidate etcd still has, or null when it has none of them (the view
   * is not listed yet, or every candidate left): then the candidates' own labels are read.
   */
  @Nullable
  private static int[] members(InstanceView view, Collection<ServiceInstance> candidates) {
    int[] found = new int[candidates.size()];
    int n = 0;
    for (ServiceInstance c : candidates) {
      int i = view.indexOf(c);
      if (i >= 0) {
        found[n++] = i;
      }
    }
    return n == 0 ? null : Arrays.copyOf(found, n);
  }

  private synchronized WeightedChoice rebuild(
      AtomicReference<Built> slot, Object source, long fingerprint,
      Collection<ServiceInstance> candidates) {
    long now = nanoTime.getAsLong();
    InstanceView view = source instanceof InstanceView v ? v : null;
    int[] members = view == null ? null : members(view, candidates);
    WeightedChoice choice;
    if (view != null && members != null) {
      // The candidate objects themselves are returned: a client finds its connection by them.
      ServiceInstance[] byIndex = new ServiceInstance[view.size()];
      for (ServiceInstance c : candidates) {
        int i = view.indexOf(c);
        if (i >= 0) {
          byIndex[i] = c;
        }
      }
      int n = members.length;
      ServiceInstance[] instances = new ServiceInstance[n];
      int[] declared = new int[n];
      String[] zones = new String[n];
      long[] ramps = new long[n];
      for (int k = 0; k < n; k++) {
        int i = members[k];
        instances[k] = byIndex[i];
        declared[k] = view.weight(i);
        zones[k] = view.zone(i);
        ramps[k] = view.rampStartNanos(i);
      }
      int[] allDeclared = new int[view.size()];
      String[] allZones = new String[view.size()];
      for (int i = 0; i < allDeclared.length; i++) {
        allDeclared[i] = view.weight(i);
        allZones[i] = view.zone(i);
      }
      choice = WeightedChoice.of(instances, declared, zones, ramps,
          WeightedChoice.demandOf(allDeclared, allZones), eligibility, slowStart,
          zoneRouting ? discovery.callerZone() : null, minLocalEndpoints, now);
    } else {
      List<ServiceInstance> list = new ArrayList<>(candidates);
      int n = list.size();
      int[] declared = new int[n];
      String[] zones = new String[n];
      long[] ramps = new long[n];
      for (int k = 0; k < n; k++) {
        declared[k] = labelWeight(list.get(k));
        zones[k] = "";
        ramps[k] = SlowStartWeights.NOT_RAMPING;
      }
      choice = WeightedChoice.of(list.toArray(ServiceInstance[]::new), declared, zones, ramps,
          null, eligibility, null, null, minLocalEndpoints, now);
    }
    logZoneOutcome(choice.zoneOutcome());
    slot.set(new Built(source, fingerprint, choice));
    return choice;
  }

  private void logZoneOutcome(ZoneShares.Outcome outcome) {
    if (outcome == ZoneShares.Outcome.TOO_FEW_LOCAL && lastOutcome != outcome) {
      logger.info("steelyard-weighted {}: zone {} has fewer than {} instances that can take calls;"
          + " routing to every zone", name, discovery == null ? "" : discovery.callerZone(), minLocalEndpoints);
    } else if (lastOutcome == ZoneShares.Outcome.TOO_FEW_LOCAL && outcome == ZoneShares.Outcome.ZONE_AWARE) {
      logger.info("steelyard-weighted {}: zone {} can take calls again; routing by zone", name,
          discovery == null ? "" : discovery.callerZone());
    }
    lastOutcome = outcome;
  }

  /** The {@code weight} label of an instance from another discovery: 0..1,000,000, else 1. */
  static int labelWeight(ServiceInstance instance) {
    String w = instance.getLabels().get(SteelyardMetadataKey.WEIGHT.getName());
    if (w == null) {
      return Validation.DEFAULT_WEIGHT;
    }
    try {
      long v = Long.parseLong(w.trim());
      return Validation.isValidWeight(v) ? (int) v : Validation.DEFAULT_WEIGHT;
    } catch (NumberFormatException e) {
      return Validation.DEFAULT_WEIGHT;
    }
  }
}
