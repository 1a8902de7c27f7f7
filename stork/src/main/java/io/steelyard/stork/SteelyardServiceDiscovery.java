package io.steelyard.stork;

import static java.util.Objects.requireNonNull;

import com.google.common.net.HostAndPort;
import io.smallrye.mutiny.Uni;
import io.smallrye.stork.api.Metadata;
import io.smallrye.stork.api.NoServiceInstanceFoundException;
import io.smallrye.stork.api.ServiceDiscovery;
import io.smallrye.stork.api.ServiceInstance;
import io.smallrye.stork.api.StorkServiceRegistry;
import io.smallrye.stork.impl.DefaultServiceInstance;
import io.smallrye.stork.utils.ServiceInstanceIds;
import io.steelyard.balancer.spi.SlowStartWeights;
import io.steelyard.discovery.ServiceWatcher;
import io.steelyard.discovery.Snapshot;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.EtcdFailureText;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.Localities;
import io.steelyard.registry.RegistryException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import javax.annotation.Nullable;
import javax.annotation.concurrent.GuardedBy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Stork's view of one steelyard service: a live {@link ServiceWatcher} (shared with every other
 * watcher and {@code etcd:} channel of the same service in the process), no polling and no cache
 * period. {@link #getServiceInstances()} answers the last list etcd sent, at once; while etcd is
 * unreachable it keeps answering that list (stale but serving) and {@link #problem()} names the
 * failure, as the CLI does. Keys whose value cannot be read are skipped, counted and logged once
 * by the watcher ({@link #malformedCount()}). Drained instances (weight 0) stay in the list: the
 * {@code steelyard-weighted} balancer skips them, any other Stork balancer sees their weight in
 * the labels.
 *
 * <p>Threading: the watcher calls in on the process's discovery thread, one call at a time;
 * {@link #getServiceInstances()} and the accessors run on any thread and never block (opening
 * the watch takes a short lock; etcd is never waited for). Ownership: the watch starts at {@link
 * #initialize} and lives until {@link #close()}; Stork has no close for a service discovery, so in
 * an application it lives as long as the JVM.
 */
final class SteelyardServiceDiscovery implements ServiceDiscovery, AutoCloseable {

  private static final Logger logger = LoggerFactory.getLogger(SteelyardServiceDiscovery.class);

  /** How long a call before etcd's first list waits for it: the CLI's bound for naming etcd. */
  static final Duration FIRST_LIST_TIMEOUT = Duration.ofSeconds(3);

  private final String service;
  private final String endpoints;
  private final boolean secure;
  @Nullable private final String callerZone;
  private final LongSupplier nanoTime;
  private final AtomicReference<InstanceView> view = new AtomicReference<>(InstanceView.NONE);
  private final CompletableFuture<InstanceView> firstList = new CompletableFuture<>();
  private final EtcdConnection etcd;
  private final KeyLayout layout;

  /** Opened by {@link #initialize} (or the first call), so a Stork that fails to start opens none. */
  @GuardedBy("this")
  @Nullable
  private ServiceWatcher watcher;

  @GuardedBy("this")
  private boolean closed;

  /** Discovery thread only: the Stork id of each address, kept while it is registered. */
  private final Map<String, Long> ids = new HashMap<>();
  /** Discovery thread only: when each serving address's ramp began. */
  private final Map<String, Long> rampStarts = new HashMap<>();

  /** The one line naming what keeps the view from being fresh; null when it is. */
  @Nullable private volatile String problem;

  SteelyardServiceDiscovery(
      String service, EtcdConnection etcd, KeyLayout layout, @Nullable String callerZone,
      boolean secure, LongSupplier nanoTime) {
    this.service = requireNonNull(service, "service");
    this.endpoints = etcd.endpointsString();
    this.secure = secure;
    this.callerZone = callerZone;
    this.nanoTime = requireNonNull(nanoTime, "nanoTime");
    this.etcd = requireNonNull(etcd, "etcd");
    this.layout = requireNonNull(layout, "layout");
  }

  /**
   * Starts the watch once Stork has created every service (Stork calls this after its
   * initialisation succeeded), so the first list is usually in before the first call.
   */
  @Override
  public void initialize(StorkServiceRegistry stork) {
    watch();
  }

  private synchronized void watch() {
    if (watcher == null && !closed) {
      watcher = ServiceWatcher.builder(etcd, service).layout(layout).open(new Listener());
    }
  }

  @Override
  public Uni<List<ServiceInstance>> getServiceInstances() {
    InstanceView v = view.get();
    if (!v.listed()) {
      watch();
    }
    if (v.listed()) {
      return Uni.createFrom().item(v.instances());
    }
    // A dependent future: Mutiny cancels it on timeout, never the shared first-list future.
    return Uni.createFrom().completionStage(() -> firstList.thenApply(InstanceView::instances))
        .ifNoItem().after(FIRST_LIST_TIMEOUT)
        .failWith(() -> new NoServiceInstanceFoundException(
            "steelyard service " + service + ": no list from etcd within "
                + FIRST_LIST_TIMEOUT.toSeconds() + " s: "
                + Optional.ofNullable(problem).orElse(
                    EtcdFailureText.where(RegistryException.Kind.UNAVAILABLE, endpoints) + "no answer yet")));
  }

  /** The current view (empty and not {@linkplain InstanceView#listed() listed} before etcd's first list). */
  InstanceView view() {
    return view.get();
  }

  /** The caller's own zone ({@code zone} attribute, else {@code STEELYARD_ZONE}), or null. */
  @Nullable
  String callerZone() {
    return callerZone;
  }

  String service() {
    return service;
  }

  /**
   * The one line naming why the view is not fresh ({@code etcd unreachable at URLS: ...}, as
   * {@code bin/steelyard} words it), or empty while etcd answers.
   */
  Optional<String> problem() {
    return Optional.ofNullable(problem);
  }

  /** Values of this service skipped as malformed since its shared watcher started. */
  synchronized long malformedCount() {
    return watcher == null ? 0 : watcher.malformedCount();
  }

  /** Stops this service's watch (shared: the etcd watch ends with its last user). */
  @Override
  public synchronized void close() {
    closed = true;
    if (watcher != null) {
      watcher.close();
      watcher = null;
    }
  }

  /** Runs on the discovery thread. */
  private final class Listener implements ServiceWatcher.Listener {

    @Override
    public void onSnapshot(Snapshot snapshot) {
      InstanceView before = view.get();
      InstanceView next = toView(snapshot, before.listed());
      if (snapshot.isStale()) {
        String text = EtcdFailureText.where(RegistryException.Kind.UNAVAILABLE, endpoints)
            + "the watch of " + service + " lost etcd at " + snapshot.staleSince().orElseThrow()
            + "; serving the last " + next.size() + " instances";
        if (problem == null) {
          logger.warn("{}", text);
        }
        problem = text;
      } else if (problem != null) {
        logger.info("steelyard service {}: etcd {} answers again; {} instances", service, endpoints, next.size());
        problem = null;
      }
      view.set(next);
      firstList.complete(next);
    }

    @Override
    public void onUnavailable(Throwable cause) {
      String text = EtcdFailureText.describe(cause, endpoints);
      if (!text.equals(problem)) {
        logger.warn("steelyard service {}: no list yet, retrying: {}", service, text);
      }
      problem = text;
    }

    @Override
    public String toString() {
      return "stork service " + service;
    }
  }

  /** Discovery thread only. */
  private InstanceView toView(Snapshot snapshot, boolean listedBefore) {
    long now = nanoTime.getAsLong();
    List<io.steelyard.registry.ServiceInstance> registered = snapshot.instances();
    int n = registered.size();
    List<ServiceInstance> instances = new ArrayList<>(n);
    int[] weights = new int[n];
    String[] zones = new String[n];
    long[] ramps = new long[n];
    Map<String, Long> nextIds = new HashMap<>();
    Map<String, Long> nextRamps = new HashMap<>();
    for (int i = 0; i < n; i++) {
      io.steelyard.registry.ServiceInstance r = registered.get(i);
      Long id = ids.get(r.address());
      if (id == null) {
        id = ServiceInstanceIds.next();
      }
      nextIds.put(r.address(), id);
      weights[i] = r.weight();
      zones[i] = Localities.zone(r.metadata());
      ramps[i] = SlowStartWeights.NOT_RAMPING;
      if (r.weight() > 0) {
        Long start = rampStarts.get(r.address());
        if (start == null) {
          // Serving before this view's first list: no ramp (a restarted caller must not starve
          // the servers it finds). Appearing later, or undrained: ramps from now.
          start = listedBefore ? now : SlowStartWeights.NOT_RAMPING;
        }
        nextRamps.put(r.address(), start);
        ramps[i] = start;
      }
      instances.add(toStork(id, r));
    }
    ids.clear();
    ids.putAll(nextIds);
    rampStarts.clear();
    rampStarts.putAll(nextRamps);
    return new InstanceView(instances, weights, zones, ramps, true, snapshot.revision());
  }

  private ServiceInstance toStork(long id, io.steelyard.registry.ServiceInstance r) {
    HostAndPort hp = HostAndPort.fromString(r.address());
    Map<String, String> labels = new HashMap<>(r.metadata());
    labels.put(SteelyardMetadataKey.WEIGHT.getName(), Integer.toString(r.weight()));
    EnumMap<SteelyardMetadataKey, Object> typed = new EnumMap<>(SteelyardMetadataKey.class);
    typed.put(SteelyardMetadataKey.WEIGHT, r.weight());
    String zone = r.metadata().get(Localities.ZONE_KEY);
    if (zone != null) {
      typed.put(SteelyardMetadataKey.ZONE, zone);
    }
    String region = r.metadata().get(Localities.REGION_KEY);
    if (region != null) {
      typed.put(SteelyardMetadataKey.REGION, region);
    }
    return new DefaultServiceInstance(id, hp.getHost(), hp.getPort(), Optional.empty(), secure,
        labels, Metadata.of(SteelyardMetadataKey.class, typed));
  }
}
