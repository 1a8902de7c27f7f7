package io.steelyard.xds;

import static java.util.Objects.requireNonNull;

import io.envoyproxy.controlplane.cache.v3.SimpleCache;
import io.steelyard.discovery.ServiceWatcher;
import io.steelyard.discovery.Snapshot;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns the services' views into the snapshot the xDS cache serves. Each new view of a service
 * rebuilds only that service's assignment; the cache then answers only the clients whose
 * requested versions changed.
 *
 * <p>While etcd is unreachable the watchers keep their last views, marked stale: the served
 * resources stay as they were and {@link #staleness} grows.
 *
 * <p>Threading: views arrive on discovery's thread and are handed to {@code executor} (serial);
 * {@link #current()} and {@link #staleness} may be called from any thread.
 */
final class XdsPublisher implements ServiceWatcher.Listener {

  /** Every client shares one group: what it sees depends on the names it asks for, not on who it is. */
  static final String GROUP = "all";

  private static final Logger log = LoggerFactory.getLogger(XdsPublisher.class);

  private final SimpleCache<String> cache;
  private final Executor executor;
  private final Clock clock;
  private final Map<String, ServiceResources> resources = new HashMap<>(); // executor only
  private final Map<String, Snapshot> views = new HashMap<>(); // executor only
  private final AtomicReference<XdsSnapshot> current = new AtomicReference<>();
  private final AtomicReference<Optional<Instant>> staleSince = new AtomicReference<>(Optional.empty());
  private final Runnable onPublish;

  XdsPublisher(SimpleCache<String> cache, Executor executor, Clock clock, Runnable onPublish) {
    this.cache = requireNonNull(cache, "cache");
    this.executor = requireNonNull(executor, "executor");
    this.clock = requireNonNull(clock, "clock");
    this.onPublish = requireNonNull(onPublish, "onPublish");
  }

  @Override
  public void onSnapshot(Snapshot snapshot) {
    executor.execute(() -> apply(snapshot));
  }

  @Override
  public void onUnavailable(Throwable cause) {
    log.warn("No listing from etcd yet, retrying: {}", cause.getMessage());
  }

  private void apply(Snapshot view) {
    String service = view.service();
    views.put(service, view);
    ServiceResources before = resources.get(service);
    ServiceResources after =
        before == null
            ? ServiceResources.of(service, view.instances())
            : before.withInstances(view.instances());
    resources.put(service, after);
    staleSince.set(
        views.values().stream()
            .map(Snapshot::staleSince)
            .flatMap(Optional::stream)
            .min(Instant::compareTo));
    long revision = views.values().stream().mapToLong(Snapshot::revision).max().orElse(0);
    XdsSnapshot previous = current.get();
    if (previous != null && after == before && previous.revision() >= revision) {
      return;
    }
    XdsSnapshot next = new XdsSnapshot(resources, Math.max(revision, previous == null ? 0 : previous.revision()));
    current.set(next);
    if (after != before) {
      log.debug("Service {} now has {} instances (revision {})", service, view.instances().size(), view.revision());
      cache.setSnapshot(GROUP, next);
    }
    onPublish.run();
  }

  /** The snapshot being served, or null before the first view. */
  XdsSnapshot current() {
    return current.get();
  }

  /** How long the oldest stale view has been stale; zero while every view is fresh. */
  Duration staleness() {
    return staleSince.get().map(s -> Duration.between(s, clock.instant())).filter(d -> !d.isNegative()).orElse(Duration.ZERO);
  }
}
