package io.steelyard.xds;

import static java.util.Objects.requireNonNull;

import io.envoyproxy.controlplane.cache.v3.SimpleCache;
import io.steelyard.discovery.ServiceWatcher;
import io.steelyard.discovery.Snapshot;
import io.steelyard.registry.ServiceInstance;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns the services' views into the snapshots the xDS cache serves: one per group of clients,
 * the zone-blind group {@link #GROUP} for clients without a zone and one group per zone the
 * clients name ({@link Subscribers#groupOf}). Each group's assignment of a service carries the
 * locality weights for a caller of that zone ({@link ZoneWeights}); listeners and clusters are
 * the same in every group. Each service's stored config is mapped by {@link ConfigMapping}
 * (routes, split clusters, outlier detection, zone routing and slow start). A new view, a change
 * of a service's stored config, or of who subscribes from which zone rebuilds only that service's
 * resources; the cache then answers only the clients whose requested versions changed.
 *
 * <p>While some instance of a service ramps ({@code slowStart}), its assignments are rebuilt
 * every {@link SlowStartRamps#step}, at most a second apart, until the last ramp has ended.
 *
 * <p>A zone's group is dropped {@link Subscribers#ZONE_GRACE} after its last stream closed, unless
 * a stream of it opened again meanwhile.
 *
 * <p>While etcd is unreachable the watchers keep their last views, marked stale: the served
 * resources stay as they were and {@link #staleness} grows.
 *
 * <p>Threading: views and configs arrive on discovery's thread, subscriptions on gRPC's; all are
 * handed to {@code executor} (serial). {@link #current()} and {@link #staleness} may be called
 * from any thread.
 */
final class XdsPublisher implements ServiceWatcher.Listener, Subscribers.Listener {

  /** The group of clients without a zone: the zone-blind assignments. */
  static final String GROUP = "all";

  private static final Logger log = LoggerFactory.getLogger(XdsPublisher.class);

  private final SimpleCache<String> cache;
  private final ScheduledExecutorService executor;
  private final Clock clock;
  private final Subscribers subscribers;
  // Executor only:
  private final Map<String, Snapshot> views = new HashMap<>();
  private final Map<String, MappedConfig> configs = new HashMap<>();
  private final Map<String, Long> reportedRevision = new HashMap<>();
  private final Map<String, SlowStartRamps> ramps = new HashMap<>();
  private final Map<String, ScheduledFuture<?>> rampSteps = new HashMap<>();
  private final Map<String, ScheduledFuture<?>> zoneExpiries = new HashMap<>();
  private final Set<String> groups = new LinkedHashSet<>(List.of(GROUP));
  private final Map<String, Map<String, ServiceResources>> resources = new HashMap<>();
  private long revision;
  private final AtomicLong refusedConfigs = new AtomicLong();
  private final AtomicLong partlyMappedConfigs = new AtomicLong();
  private final ConfigMapping mapping;
  private final AtomicReference<XdsSnapshot> current = new AtomicReference<>();
  private final AtomicReference<Optional<Instant>> staleSince = new AtomicReference<>(Optional.empty());
  private final Runnable onPublish;

  XdsPublisher(
      SimpleCache<String> cache,
      ScheduledExecutorService executor,
      Clock clock,
      int maxZones,
      ConfigMapping mapping,
      Runnable onPublish) {
    this.subscribers = new Subscribers(this, maxZones);
    this.cache = requireNonNull(cache, "cache");
    this.mapping = requireNonNull(mapping, "mapping");
    this.executor = requireNonNull(executor, "executor");
    this.clock = requireNonNull(clock, "clock");
    this.onPublish = requireNonNull(onPublish, "onPublish");
  }

  /** Who subscribes from which zone: fed by the stream callbacks, read for the demand. */
  Subscribers subscribers() {
    return subscribers;
  }

  @Override
  public void onSnapshot(Snapshot snapshot) {
    executor.execute(() -> apply(snapshot));
  }

  @Override
  public void onUnavailable(Throwable cause) {
    log.warn("No listing from etcd yet, retrying: {}", cause.getMessage());
  }

  @Override
  public void onServiceConfig(String service, @Nullable String json, long modRevision) {
    executor.execute(() -> applyConfig(service, json, modRevision));
  }

  @Override
  public void demandChanged(Set<String> services) {
    executor.execute(() -> {
      Set<String> changed = new TreeSet<>();
      for (String service : services) {
        changed.addAll(rebuild(service));
      }
      publish(changed, false);
    });
  }

  @Override
  public void zoneSeen(String zone) {
    executor.execute(() -> {
      ScheduledFuture<?> expiry = zoneExpiries.remove(zone);
      if (expiry != null) {
        expiry.cancel(false);
      }
      String group = Subscribers.groupOf(zone);
      if (groups.add(group)) {
        Set<String> changed = new TreeSet<>(Set.of(group));
        for (String service : views.keySet()) {
          changed.addAll(rebuild(service));
        }
        publish(changed, false);
      }
    });
  }

  @Override
  public void zoneIdle(String zone) {
    executor.execute(() -> {
      ScheduledFuture<?> earlier = zoneExpiries.put(zone, executor.schedule(() -> forget(zone),
          Subscribers.ZONE_GRACE.toNanos(), TimeUnit.NANOSECONDS));
      if (earlier != null) {
        earlier.cancel(false);
      }
    });
  }

  private void forget(String zone) {
    zoneExpiries.remove(zone);
    if (!subscribers.forgetIfIdle(zone)) {
      return;
    }
    String group = Subscribers.groupOf(zone);
    groups.remove(group);
    resources.remove(group);
    cache.clearSnapshot(group);
    log.debug("Zone {} has had no stream for {}: its snapshot group is dropped", zone, Subscribers.ZONE_GRACE);
  }

  private void apply(Snapshot view) {
    String service = view.service();
    views.put(service, view);
    ramps.computeIfAbsent(service, s -> new SlowStartRamps()).update(view.instances(), clock.instant());
    staleSince.set(
        views.values().stream()
            .map(Snapshot::staleSince)
            .flatMap(Optional::stream)
            .min(Instant::compareTo));
    long newest = views.values().stream().mapToLong(Snapshot::revision).max().orElse(0);
    Set<String> changed = rebuild(service);
    XdsSnapshot previous = current.get();
    if (previous != null && changed.isEmpty() && revision >= newest) {
      return;
    }
    revision = Math.max(revision, newest);
    if (!changed.isEmpty()) {
      log.debug("Service {} now has {} instances (revision {})", service, view.instances().size(), view.revision());
    }
    publish(changed, true);
    onPublish.run();
  }

  /**
   * Takes a service's stored config ({@link ConfigMapping}). A refused one keeps the last good
   * mapping in force; a refused one and one served without some of its parts are each logged
   * once per revision, naming the reason or the parts, and counted.
   */
  private void applyConfig(String service, @Nullable String json, long modRevision) {
    MappedConfig config;
    try {
      config = mapping.map(json);
    } catch (IllegalArgumentException e) {
      if (firstReport(service, modRevision)) {
        refusedConfigs.incrementAndGet();
        log.warn("The stored service config of {} (revision {}) is refused, the last good one stays in force: {}",
            service, modRevision, e.getMessage());
      }
      return;
    }
    if (!config.leftOut().isEmpty() && firstReport(service, modRevision)) {
      partlyMappedConfigs.incrementAndGet();
      log.warn("The stored service config of {} (revision {}) is served without {}: xDS has no form for {}",
          service, modRevision, String.join(", ", config.leftOut()), config.leftOut().size() == 1 ? "it" : "them");
    }
    if (config.equals(configs.put(service, config))) {
      return;
    }
    log.info("Service {}: serving its stored config as {}", service,
        config.served().isEmpty() ? "the defaults" : String.join("; ", config.served()));
    publish(rebuild(service), false);
  }

  /** Whether this revision of the service's config is not reported yet; notes it reported. */
  private boolean firstReport(String service, long modRevision) {
    Long reported = reportedRevision.put(service, modRevision);
    return reported == null || reported != modRevision;
  }

  /**
   * Rebuilds the service's assignment in every group; returns the groups whose assignment
   * changed. Schedules the ramp's next step while one runs.
   */
  private Set<String> rebuild(String service) {
    Snapshot view = views.get(service);
    if (view == null) {
      return Set.of();
    }
    MappedConfig config = configs.getOrDefault(service, MappedConfig.NONE);
    StoredPolicy policy = config.policy();
    Instant now = clock.instant();
    List<ServiceInstance> instances = view.instances();
    SlowStartRamps ramp = ramps.get(service);
    Map<String, Long> demand = subscribers.demand(service);
    Set<String> changed = new TreeSet<>();
    for (String group : groups) {
      String zone = Subscribers.zoneOfGroup(group);
      // Each cluster's weights over its own instances: the zone step inside each split entry.
      Function<List<ServiceInstance>, int[]> weights = members -> ZoneWeights.weights(
          members, ramp.factors(members, policy.slowStart(), now), zone, policy.zoneRouting(), demand);
      Map<String, ServiceResources> byService = resources.computeIfAbsent(group, g -> new HashMap<>());
      ServiceResources before = byService.get(service);
      ServiceResources after = ServiceResources.build(service, instances, config, weights, before);
      if (after != before) {
        byService.put(service, after);
        changed.add(group);
      }
    }
    if (ramp.ramping(policy.slowStart(), now) && !rampSteps.containsKey(service)) {
      Duration step = SlowStartRamps.step(policy.slowStart());
      rampSteps.put(service, executor.schedule(() -> {
        rampSteps.remove(service);
        publish(rebuild(service), false);
      }, step.toNanos(), TimeUnit.NANOSECONDS));
    }
    return changed;
  }

  /**
   * Sets the snapshot of every group in {@code changed}, and of the zone-blind group (the one
   * {@link #current()} returns) when {@code always}: a newer revision is worth reporting.
   */
  private void publish(Set<String> changed, boolean always) {
    if (views.isEmpty()) {
      return;
    }
    for (String group : groups) {
      boolean zoneBlind = group.equals(GROUP);
      if (!changed.contains(group) && !(zoneBlind && (always || current.get() == null))) {
        continue;
      }
      XdsSnapshot next = new XdsSnapshot(resources.getOrDefault(group, Map.of()), revision);
      if (zoneBlind) {
        current.set(next);
      }
      if (changed.contains(group)) {
        cache.setSnapshot(group, next);
      }
    }
  }

  /** Stored configs refused so far, each revision counted once. */
  long refusedConfigs() {
    return refusedConfigs.get();
  }

  /** Stored configs served without some part xDS has no form for, each revision counted once. */
  long partlyMappedConfigs() {
    return partlyMappedConfigs.get();
  }

  /** The snapshot served to callers in {@code zone} (null: zone-less), or null before any. */
  @Nullable
  XdsSnapshot snapshot(@Nullable String zone) {
    return (XdsSnapshot) cache.getSnapshot(Subscribers.groupOf(zone));
  }

  /** The zone-blind snapshot being served, or null before the first view. */
  XdsSnapshot current() {
    return current.get();
  }

  /** How long the oldest stale view has been stale; zero while every view is fresh. */
  Duration staleness() {
    return staleSince.get().map(s -> Duration.between(s, clock.instant())).filter(d -> !d.isNegative()).orElse(Duration.ZERO);
  }
}
