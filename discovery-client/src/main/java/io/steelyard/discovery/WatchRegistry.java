package io.steelyard.discovery;

import static java.util.Objects.requireNonNull;

import com.google.common.annotations.VisibleForTesting;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import javax.annotation.concurrent.GuardedBy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The process-wide share of etcd clients and watchers: one etcd client ({@link SharedClient}) per
 * {@link EtcdConnection}, one {@link PrefixWatcher} per (connection, layout, service, timings),
 * each reference-counted and closed when its last user leaves.
 *
 * <p>A single lock guards both maps; it is held only for map bookkeeping, never while talking
 * to etcd. Closing a jetcd client can block for a moment, so it runs on a separate thread.
 */
final class WatchRegistry {

  private static final Logger logger = LoggerFactory.getLogger(WatchRegistry.class);

  /**
   * The registry of the process, behind every {@code etcd:} channel, {@link ServiceWatcher} and
   * {@link DiscoveryStats}: the one piece of process-wide state of this module. Its watchers run
   * on one daemon thread, {@code steelyard-discovery}.
   */
  static final WatchRegistry SHARED = newShared();

  private static WatchRegistry newShared() {
    Scheduler scheduler = Scheduler.newDaemon("steelyard-discovery");
    Executor closer = command -> {
      Thread t = new Thread(command, "steelyard-discovery-close");
      t.setDaemon(true);
      t.start();
    };
    return new WatchRegistry(
        scheduler, new Random(), closer, connection -> RenewingClient.of(connection, scheduler, closer));
  }

  /** A connection's client as its watchers share it; closed when the last of them leaves. */
  interface SharedClient extends ClientSource {
    /** Closes the client for good; may block for a moment, so the registry calls it on its closer. */
    void close();
  }

  private record WatchKey(EtcdConnection connection, KeyLayout layout, String service, WatcherConfig config) {}

  /** One connection's shared client and how many watchers use it. */
  private static final class ClientRef {
    final SharedClient client;
    int users;

    ClientRef(SharedClient client) {
      this.client = client;
    }
  }

  private static final class WatcherRef {
    final PrefixWatcher watcher;
    /** The service config's watch, next to the instances'; it starts with its first listener. */
    final ServiceConfigWatcher config;
    int users;

    WatcherRef(PrefixWatcher watcher, ServiceConfigWatcher config) {
      this.watcher = watcher;
      this.config = config;
    }
  }

  private final Scheduler scheduler;
  private final Random random;
  private final Executor closer;
  private final Function<EtcdConnection, SharedClient> connector;
  private final WatchStats stats = new WatchStats();

  @GuardedBy("this")
  private final Map<EtcdConnection, ClientRef> clients = new HashMap<>();

  @GuardedBy("this")
  private final Map<WatchKey, WatcherRef> watchers = new HashMap<>();

  @GuardedBy("this")
  private final List<WatcherObserver> observers = new ArrayList<>();

  /**
   * @param scheduler where every watcher of this registry runs, and its clock
   * @param closer runs client closes, which may block briefly
   * @param connector makes the shared client of a connection; called with this registry's lock
   *     held, so it must not wait for etcd (jetcd connects lazily)
   */
  WatchRegistry(
      Scheduler scheduler,
      Random random,
      Executor closer,
      Function<EtcdConnection, SharedClient> connector) {
    this.scheduler = scheduler;
    this.random = random;
    this.closer = closer;
    this.connector = connector;
  }

  /**
   * Told when a shared watcher starts and stops: the hook of {@link DiscoveryMetrics}. Called
   * with this registry's lock held, in order, so it must be quick and must not call back into
   * the registry.
   */
  interface WatcherObserver {
    void started(PrefixWatcher watcher);

    void stopped(PrefixWatcher watcher);
  }

  /**
   * Adds {@code observer}, first telling it about every watcher alive now; closing the handle
   * removes it (without telling it about the watchers still alive).
   */
  AutoCloseable observe(WatcherObserver observer) {
    requireNonNull(observer, "observer");
    synchronized (this) {
      observers.add(observer);
      watchers.values().forEach(r -> observer.started(r.watcher));
    }
    return () -> {
      synchronized (this) {
        observers.remove(observer);
      }
    };
  }

  /** A listener's hold on a shared watcher; closing it releases the watcher and its client. */
  interface Subscription extends AutoCloseable {
    PrefixWatcher watcher();

    /** The service config's watcher of the same service, shared like {@link #watcher()}. */
    ServiceConfigWatcher config();

    @Override
    void close();
  }

  /**
   * Subscribes {@code listener} to the service's shared watcher, creating the watcher (and the
   * etcd client) if this is the first user. The listener gets the current view right away if
   * there is one.
   *
   * @throws IllegalArgumentException if the service name is invalid, or jetcd refuses the
   *     connection settings
   */
  Subscription subscribe(
      EtcdConnection connection,
      KeyLayout layout,
      String service,
      WatcherConfig config,
      WatchListener listener) {
    requireNonNull(connection, "connection");
    requireNonNull(layout, "layout");
    requireNonNull(listener, "listener");
    layout.servicePrefix(service); // validates the name before anything is created
    WatchKey key = new WatchKey(connection, layout, service, config);
    PrefixWatcher watcher;
    ServiceConfigWatcher configWatcher;
    boolean created = false;
    synchronized (this) {
      WatcherRef ref = watchers.get(key);
      if (ref == null) {
        ClientRef c = clients.get(connection);
        if (c == null) {
          c = new ClientRef(connector.apply(connection));
          clients.put(connection, c);
          stats.etcdClients.incrementAndGet();
          logger.debug("Connected a shared etcd client to {}", connection);
        }
        c.users++;
        ref = new WatcherRef(
            new PrefixWatcher(
                c.client, connection.endpointsString(), layout, service, config, scheduler, random, stats),
            new ServiceConfigWatcher(
                c.client, connection.endpointsString(), layout, service, config, scheduler, random));
        watchers.put(key, ref);
        stats.activeWatches.incrementAndGet();
        created = true;
        for (WatcherObserver o : observers) {
          o.started(ref.watcher);
        }
      }
      ref.users++;
      watcher = ref.watcher;
      configWatcher = ref.config;
    }
    watcher.addListener(listener);
    if (created) {
      watcher.start();
    }
    AtomicBoolean released = new AtomicBoolean();
    PrefixWatcher w = watcher;
    ServiceConfigWatcher cw = configWatcher;
    return new Subscription() {
      @Override
      public PrefixWatcher watcher() {
        return w;
      }

      @Override
      public ServiceConfigWatcher config() {
        return cw;
      }

      @Override
      public void close() {
        if (released.compareAndSet(false, true)) {
          w.removeListener(listener);
          release(key);
        }
      }
    };
  }

  private void release(WatchKey key) {
    ClientRef toClose = null;
    PrefixWatcher toStop = null;
    ServiceConfigWatcher configToStop = null;
    synchronized (this) {
      WatcherRef ref = watchers.get(key);
      if (ref == null || --ref.users > 0) {
        return;
      }
      watchers.remove(key);
      stats.activeWatches.decrementAndGet();
      toStop = ref.watcher;
      configToStop = ref.config;
      for (WatcherObserver o : observers) {
        o.stopped(toStop);
      }
      ClientRef c = clients.get(key.connection());
      if (c != null && --c.users == 0) {
        clients.remove(key.connection());
        stats.etcdClients.decrementAndGet();
        toClose = c;
      }
    }
    toStop.close();
    configToStop.close();
    if (toClose != null) {
      SharedClient client = toClose.client;
      // After the watcher's close, already queued, so its watch is cancelled first.
      scheduler.execute(() -> closer.execute(() -> {
        try {
          client.close();
        } catch (RuntimeException e) {
          logger.debug("Closing the etcd client of {} failed", key.connection(), e);
        }
      }));
    }
  }

  /** Where this registry's watchers run; a {@link ServiceNameWatcher} runs there too. */
  Scheduler scheduler() {
    return scheduler;
  }

  /** Runs client closes, which may block briefly. */
  Executor closer() {
    return closer;
  }

  /** This registry's counters; any thread. */
  WatchStats stats() {
    return stats;
  }

  /** How long the stalest watcher has been stale, by the scheduler's clock; any thread. */
  Duration maxStaleness() {
    List<PrefixWatcher> live;
    synchronized (this) {
      live = new ArrayList<>(watchers.size());
      watchers.values().forEach(r -> live.add(r.watcher));
    }
    long now = scheduler.currentTimeMillis();
    long max = 0;
    for (PrefixWatcher w : live) {
      long since = w.staleSinceMillis();
      if (since != 0) {
        max = Math.max(max, now - since);
      }
    }
    return Duration.ofMillis(max);
  }

  @VisibleForTesting
  synchronized int watcherCount() {
    return watchers.size();
  }

  @VisibleForTesting
  synchronized int clientCount() {
    return clients.size();
  }
}
