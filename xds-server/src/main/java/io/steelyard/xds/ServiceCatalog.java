package io.steelyard.xds;

import static java.util.Objects.requireNonNull;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import io.steelyard.discovery.ServiceWatcher;
import io.steelyard.discovery.Snapshot;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.Validation;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The services the control plane serves, each followed by one {@link ServiceWatcher}.
 *
 * <p>With a fixed list the watchers open at once. With {@linkplain #all all services} the
 * catalog lists the registry prefix (keys only) and then watches it for puts, opening a watcher
 * the first time a key names a new service; discovery has no prefix-wide watcher, and the
 * per-service watchers share one etcd client and one watch stream. A service whose keys are all
 * gone keeps its watcher and is served with no endpoints.
 *
 * <p>Threading: all state lives on {@code executor}, a serial executor owned by the caller;
 * {@code sink} is called on discovery's thread, as {@link ServiceWatcher.Listener} is.
 */
final class ServiceCatalog implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(ServiceCatalog.class);
  static final Duration RETRY_INITIAL = Duration.ofMillis(500);
  static final Duration RETRY_MAX = Duration.ofSeconds(10);

  private final EtcdConnection connection;
  private final KeyLayout layout;
  @Nullable private final Set<String> fixed;
  private final ServiceWatcher.Listener sink;
  private final ScheduledExecutorService executor;
  private final Map<String, ServiceWatcher> watchers = new HashMap<>(); // executor only
  @Nullable private Client client; // executor only
  @Nullable private Watch.Watcher names; // executor only
  private long retryMillis = RETRY_INITIAL.toMillis(); // executor only
  private boolean closed; // executor only

  /**
   * @param fixed the services to serve, or null for every service under the prefix
   */
  ServiceCatalog(
      EtcdConnection connection,
      KeyLayout layout,
      @Nullable Set<String> fixed,
      ServiceWatcher.Listener sink,
      ScheduledExecutorService executor) {
    this.connection = requireNonNull(connection, "connection");
    this.layout = requireNonNull(layout, "layout");
    this.fixed = fixed == null ? null : Set.copyOf(fixed);
    this.sink = requireNonNull(sink, "sink");
    this.executor = requireNonNull(executor, "executor");
  }

  void start() {
    executor.execute(
        () -> {
          if (fixed != null) {
            fixed.stream().sorted().forEach(this::follow);
          } else {
            client = connection.connect();
            listNames();
          }
        });
  }

  /** The service a key of the registry belongs to, if it is an instance key. */
  static Optional<String> serviceOf(KeyLayout layout, String key) {
    String root = layout.prefix() + "/";
    if (!key.startsWith(root)) {
      return Optional.empty();
    }
    int slash = key.indexOf('/', root.length());
    if (slash < 0 || slash == key.length() - 1) {
      return Optional.empty();
    }
    String service = key.substring(root.length(), slash);
    return Validation.isValidServiceName(service) ? Optional.of(service) : Optional.empty();
  }

  private ByteSequence root() {
    return ByteSequence.from(layout.prefix() + "/", StandardCharsets.UTF_8);
  }

  private void listNames() {
    if (closed) {
      return;
    }
    requireNonNull(client, "client")
        .getKVClient()
        .get(root(), GetOption.builder().isPrefix(true).withKeysOnly(true).build())
        .whenComplete(
            (response, error) ->
                executor.execute(
                    () -> {
                      if (closed) {
                        return;
                      }
                      if (error != null) {
                        retry("listing " + layout.prefix(), error);
                        return;
                      }
                      for (KeyValue kv : response.getKvs()) {
                        learn(kv.getKey());
                      }
                      watchNames(response.getHeader().getRevision() + 1);
                    }));
  }

  private void watchNames(long fromRevision) {
    WatchOption option =
        WatchOption.builder().isPrefix(true).withNoDelete(true).withRevision(fromRevision).build();
    names =
        requireNonNull(client, "client")
            .getWatchClient()
            .watch(
                root(),
                option,
                new Watch.Listener() {
                  @Override
                  public void onNext(WatchResponse response) {
                    executor.execute(() -> onNames(response));
                  }

                  @Override
                  public void onError(Throwable error) {
                    executor.execute(() -> retry("watching " + layout.prefix(), error));
                  }

                  @Override
                  public void onCompleted() {
                    executor.execute(
                        () -> retry("watching " + layout.prefix(), new IllegalStateException("watch ended")));
                  }
                });
  }

  private void onNames(WatchResponse response) {
    if (closed) {
      return;
    }
    retryMillis = RETRY_INITIAL.toMillis();
    for (WatchEvent event : response.getEvents()) {
      learn(event.getKeyValue().getKey());
    }
  }

  private void learn(ByteSequence key) {
    serviceOf(layout, key.toString(StandardCharsets.UTF_8))
        .filter(s -> !watchers.containsKey(s))
        .ifPresent(this::follow);
  }

  private void follow(String service) {
    log.info("Serving service {} over xDS", service);
    watchers.put(service, ServiceWatcher.builder(connection, service).layout(layout).serviceConfig().open(sink));
  }

  private void retry(String what, Throwable error) {
    if (closed) {
      return;
    }
    if (names != null) {
      names.close();
      names = null;
    }
    long delay = retryMillis;
    retryMillis = Math.min(retryMillis * 2, RETRY_MAX.toMillis());
    log.warn("{} failed (etcd {}), retrying in {} ms: {}", what, connection.endpointsString(), delay, error.toString());
    executor.schedule(this::listNames, delay, TimeUnit.MILLISECONDS);
  }

  @Override
  public void close() {
    executor.execute(
        () -> {
          closed = true;
          if (names != null) {
            names.close();
          }
          watchers.values().forEach(ServiceWatcher::close);
          watchers.clear();
          if (client != null) {
            client.close();
          }
        });
  }
}
