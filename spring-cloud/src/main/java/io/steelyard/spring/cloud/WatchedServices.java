package io.steelyard.spring.cloud;

import static java.util.Objects.requireNonNull;

import io.steelyard.balancer.spi.SlowStartConfig;
import io.steelyard.discovery.ServiceNameWatcher;
import io.steelyard.discovery.ServiceWatcher;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.Validation;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.SortedSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import javax.annotation.Nullable;
import javax.annotation.concurrent.GuardedBy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The services this application looks up, each a {@link ServiceView} fed by one {@link
 * ServiceWatcher} (shared with any {@code etcd:///} gRPC channel of the same service in the
 * process). A service is watched from its first lookup until the application stops: lookups after
 * the first are answered from memory, kept current by the watch, never by polling etcd.
 *
 * <p>Threading: thread-safe. Ownership: closes its watchers on {@link #close}.
 */
final class WatchedServices implements AutoCloseable {

  private static final Logger logger = LoggerFactory.getLogger(WatchedServices.class);

  private final EtcdConnection etcd;
  private final KeyLayout layout;
  private final Duration debounce;
  private final Duration relistInterval;
  @Nullable private final SlowStartConfig slowStart;
  private final Duration firstListTimeout;
  private final LongSupplier nanoTime;
  private final ConcurrentHashMap<String, ServiceView> views = new ConcurrentHashMap<>();
  private final List<ServiceWatcher> watchers = new ArrayList<>();

  @GuardedBy("this")
  @Nullable
  private ServiceNameWatcher names;

  @Nullable private volatile RegistryException lastFailure;

  @GuardedBy("this")
  private boolean closed;

  WatchedServices(
      EtcdConnection etcd, KeyLayout layout, Duration debounce, Duration relistInterval,
      @Nullable SlowStartConfig slowStart, Duration firstListTimeout, LongSupplier nanoTime) {
    this.etcd = requireNonNull(etcd, "etcd");
    this.layout = requireNonNull(layout, "layout");
    this.debounce = requireNonNull(debounce, "debounce");
    this.relistInterval = requireNonNull(relistInterval, "relistInterval");
    this.slowStart = slowStart;
    this.firstListTimeout = requireNonNull(firstListTimeout, "firstListTimeout");
    this.nanoTime = requireNonNull(nanoTime, "nanoTime");
  }

  /**
   * The view of {@code service}, watched from now on; empty for a name the registry refuses
   * (such a service cannot have instances).
   */
  Optional<ServiceView> view(String service) {
    ServiceView view = views.get(service);
    if (view != null) {
      return Optional.of(view);
    }
    try {
      Validation.checkServiceName(service);
    } catch (IllegalArgumentException e) {
      logger.debug("Not a registry service name: {}", e.getMessage());
      return Optional.empty();
    }
    return Optional.of(views.computeIfAbsent(service, this::watch));
  }

  private ServiceView watch(String service) {
    ServiceView view = new ServiceView(service, slowStart, nanoTime);
    ServiceWatcher watcher = ServiceWatcher.builder(etcd, service)
        .layout(layout)
        .debounce(debounce)
        .relistInterval(relistInterval)
        .open(view);
    synchronized (this) {
      if (closed) {
        watcher.close();
        throw new IllegalStateException("the watched services are closed");
      }
      watchers.add(watcher);
    }
    logger.debug("Watching {} in etcd {}", layout.servicePrefix(service), etcd.endpointsString());
    return view;
  }

  /** How long a first lookup waits for etcd's first list of a service. */
  Duration firstListTimeout() {
    return firstListTimeout;
  }

  /**
   * The names of the services that have at least one instance in etcd, sorted: from discovery's
   * {@link ServiceNameWatcher}, opened at the first call and kept live from then on (Spring Cloud
   * asks for this rarely: the discovery health indicator, tools). The first call waits up to
   * {@link #firstListTimeout} for the first listing; while etcd is away later, the last names
   * known are answered.
   *
   * @throws IllegalStateException when the first listing is not in within the timeout
   */
  List<String> services() {
    ServiceNameWatcher watcher = names();
    try {
      if (!watcher.awaitFirstListing(firstListTimeout)) {
        RegistryException failure = lastFailure;
        throw new IllegalStateException("Cannot list services under " + layout.registryPrefix()
            + " in etcd " + etcd.endpointsString() + " within " + firstListTimeout
            + (failure == null ? "" : ": " + failure.getMessage()), failure);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return List.of();
    }
    return List.copyOf(watcher.names());
  }

  private synchronized ServiceNameWatcher names() {
    if (closed) {
      throw new IllegalStateException("the watched services are closed");
    }
    if (names == null) {
      names = ServiceNameWatcher.builder(etcd).layout(layout).open(new ServiceNameWatcher.Listener() {
        @Override
        public void onNames(SortedSet<String> current) {
          lastFailure = null;
        }

        @Override
        public void onFailure(RegistryException error) {
          lastFailure = error;
        }
      });
    }
    return names;
  }

  @Override
  public void close() {
    List<ServiceWatcher> toClose;
    ServiceNameWatcher nameWatcher;
    synchronized (this) {
      closed = true;
      toClose = new ArrayList<>(watchers);
      watchers.clear();
      nameWatcher = names;
      names = null;
    }
    toClose.forEach(ServiceWatcher::close);
    if (nameWatcher != null) {
      nameWatcher.close();
    }
  }
}
