package io.steelyard.discovery;

import static com.google.common.base.Preconditions.checkState;
import static java.util.Objects.requireNonNull;

import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.RegistryException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import javax.annotation.Nullable;

/**
 * Watches one service's instances in etcd, for callers that are not gRPC channels.
 *
 * <pre>{@code
 * try (ServiceWatcher w = ServiceWatcher.open(EtcdConnection.fromEnvironment(),
 *     KeyLayout.defaults(), "greeter", snapshot -> logger.info("{}", snapshot.instances()))) {
 *   ...
 * }
 * }</pre>
 *
 * <p>The listener first receives the complete current list, then a new complete snapshot after
 * every change (at most one per {@value #DEFAULT_DEBOUNCE_MILLIS} ms window by default, the first
 * change after a quiet window at once, the rest of a burst coalesced) and
 * whenever the view turns stale or fresh again. It is never handed an empty list because etcd
 * went away: while etcd is unreachable it keeps the last list, marked {@linkplain
 * Snapshot#isStale() stale}. Before the first list, failures to reach etcd, and etcd's refusals,
 * go to {@link Listener#onUnavailable}.
 *
 * <p>Watchers are shared: every {@code ServiceWatcher} and every {@code etcd:} channel of the
 * process that names the same etcd connection, key layout and service uses one etcd watch and
 * one etcd client, released when the last of them closes.
 *
 * <p>Threading: listeners are called on the discovery thread shared by all watchers of the
 * process, one call at a time per watcher. They must return quickly and never block.
 */
public final class ServiceWatcher implements AutoCloseable {

  /** Default coalescing (throttle) window, in milliseconds. */
  public static final long DEFAULT_DEBOUNCE_MILLIS = WatcherDefaults.DEBOUNCE_MILLIS;

  /** Default interval of the safety-net re-list, in minutes. */
  public static final long DEFAULT_RELIST_INTERVAL_MINUTES = WatcherDefaults.RELIST_INTERVAL_MINUTES;

  /** Default first retry delay while etcd is unreachable, in milliseconds (then doubling). */
  public static final long DEFAULT_BACKOFF_INITIAL_MILLIS = WatcherDefaults.BACKOFF_INITIAL_MILLIS;

  /** Default longest retry delay while etcd is unreachable, in milliseconds. */
  public static final long DEFAULT_BACKOFF_MAX_MILLIS = WatcherDefaults.BACKOFF_MAX_MILLIS;

  /** Receives the service's snapshots. */
  @FunctionalInterface
  public interface Listener {
    /** A complete new view of the service. Called on the discovery thread: do not block. */
    void onSnapshot(Snapshot snapshot);

    /**
     * No list has been obtained yet and the last attempt failed; retries continue. Never called
     * once a snapshot has been delivered. {@code cause} is a {@link RegistryException} whose
     * {@link RegistryException#kind() kind} tells etcd being unreachable ({@code UNAVAILABLE},
     * retried with backoff) from etcd refusing ({@link RegistryException.Kind#refused()}:
     * permission, authentication, TLS, a size limit; retried only every few seconds until an
     * operator fixes it); its message is one line naming the problem.
     */
    default void onUnavailable(Throwable cause) {}

    /**
     * The stored service config of {@code service} ({@link KeyLayout#serviceConfigKey}) as its text and
     * mod revision, or a null text when none is stored: once read, then after every change. Only
     * for a watcher opened with {@link Builder#serviceConfig()}; never called while the key
     * cannot be read (the last text stays). Called on the discovery thread: do not block.
     */
    default void onServiceConfig(String service, @Nullable String json, long modRevision) {}
  }

  private final WatchRegistry.Subscription subscription;
  private final AtomicReference<Snapshot> current;
  @Nullable private final Consumer<StoredServiceConfig> configListener;

  private ServiceWatcher(
      WatchRegistry.Subscription subscription,
      AtomicReference<Snapshot> current,
      @Nullable Consumer<StoredServiceConfig> configListener) {
    this.subscription = subscription;
    this.current = current;
    this.configListener = configListener;
  }

  /**
   * Starts watching {@code service} with default timings.
   *
   * @throws IllegalArgumentException if {@code service} is not a valid service name
   */
  public static ServiceWatcher open(
      EtcdConnection connection, KeyLayout layout, String service, Listener listener) {
    return builder(connection, service).layout(layout).open(listener);
  }

  public static Builder builder(EtcdConnection connection, String service) {
    return new Builder(connection, service);
  }

  /** The last snapshot delivered, or null before the first list. */
  @Nullable
  public Snapshot current() {
    return current.get();
  }

  /** Values of this service skipped as malformed since the shared watcher started. */
  public long malformedCount() {
    return subscription.watcher().counters().malformedCount();
  }

  PrefixWatcher watcher() {
    return subscription.watcher();
  }

  /** Stops delivering to this listener; the shared watch stops when its last user closes. */
  @Override
  public void close() {
    if (configListener != null) {
      subscription.config().removeListener(configListener);
    }
    subscription.close();
  }

  /** Options of a {@link ServiceWatcher}; each may be set once. */
  public static final class Builder {
    private final EtcdConnection connection;
    private final String service;
    @Nullable private KeyLayout layout;
    private WatcherConfig config = WatcherConfig.DEFAULTS;
    private boolean debounceSet;
    private boolean relistSet;
    private boolean backoffSet;
    private boolean serviceConfig;

    private Builder(EtcdConnection connection, String service) {
      this.connection = requireNonNull(connection, "connection");
      this.service = requireNonNull(service, "service");
    }

    /** Key layout (prefix); default {@link KeyLayout#defaults()}. */
    public Builder layout(KeyLayout layout) {
      checkState(this.layout == null, "layout already set");
      this.layout = requireNonNull(layout, "layout");
      return this;
    }

    /**
     * Coalescing window: at most one snapshot per window, the first change after a quiet window
     * at once; default {@value #DEFAULT_DEBOUNCE_MILLIS} ms, zero publishes every change.
     */
    public Builder debounce(Duration debounce) {
      checkState(!debounceSet, "debounce already set");
      config = config.withDebounce(debounce);
      debounceSet = true;
      return this;
    }

    /** Safety-net full re-list interval; default {@value #DEFAULT_RELIST_INTERVAL_MINUTES} min. */
    public Builder relistInterval(Duration interval) {
      checkState(!relistSet, "relistInterval already set");
      config = config.withRelistInterval(interval);
      relistSet = true;
      return this;
    }

    /**
     * Retry backoff while etcd is unreachable: {@code initial} doubling up to {@code max}, each
     * step ±25% jittered; default {@value #DEFAULT_BACKOFF_INITIAL_MILLIS} ms up to {@value
     * #DEFAULT_BACKOFF_MAX_MILLIS} ms.
     */
    public Builder backoff(Duration initial, Duration max) {
      checkState(!backoffSet, "backoff already set");
      config = config.withBackoff(initial, max);
      backoffSet = true;
      return this;
    }

    /**
     * Also follow the service's stored service config, handed to {@link
     * Listener#onServiceConfig}; it shares the config watch of the process's {@code etcd:}
     * channels of the service. Off by default: a plain watcher costs no config watch.
     */
    public Builder serviceConfig() {
      checkState(!serviceConfig, "serviceConfig already set");
      serviceConfig = true;
      return this;
    }

    KeyLayout layoutOrDefault() {
      return layout == null ? KeyLayout.defaults() : layout;
    }

    /** Starts (or joins) the shared watch and registers {@code listener}. */
    public ServiceWatcher open(Listener listener) {
      return open(WatchRegistry.SHARED, listener);
    }

    /** Opens on {@code registry} instead of the process-wide one: tests inject their seams there. */
    ServiceWatcher open(WatchRegistry registry, Listener listener) {
      requireNonNull(listener, "listener");
      AtomicReference<Snapshot> current = new AtomicReference<>();
      WatchListener adapter = new WatchListener() {
        @Override
        public void onSnapshot(Snapshot snapshot) {
          current.set(snapshot);
          listener.onSnapshot(snapshot);
        }

        @Override
        public void onUnavailable(Throwable cause) {
          listener.onUnavailable(cause);
        }

        @Override
        public String toString() {
          return listener.toString();
        }
      };
      WatchRegistry.Subscription subscription =
          registry.subscribe(connection, layoutOrDefault(), service, config, adapter);
      Consumer<StoredServiceConfig> configListener = null;
      if (serviceConfig) {
        configListener = c -> {
          if (c.state() == StoredServiceConfig.State.PRESENT || c.state() == StoredServiceConfig.State.ABSENT) {
            listener.onServiceConfig(service, c.json(), c.modRevision());
          }
        };
        subscription.config().addListener(configListener);
      }
      return new ServiceWatcher(subscription, current, configListener);
    }
  }
}
