package io.steelyard.xds;

import static java.util.Objects.requireNonNull;

import io.steelyard.discovery.ServiceNameWatcher;
import io.steelyard.discovery.ServiceWatcher;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The services the control plane serves, each followed by one {@link ServiceWatcher}.
 *
 * <p>With a fixed list the watchers open at once. With every service (no list) discovery's
 * {@link ServiceNameWatcher} lists and watches the registry prefix, and a watcher opens the first
 * time a name appears; the per-service watchers share one etcd client and one watch stream. A
 * service whose keys are all gone keeps its watcher and is served with no endpoints.
 *
 * <p>Threading: all state lives on {@code executor}, a serial executor owned by the caller;
 * {@code sink} is called on discovery's thread, as {@link ServiceWatcher.Listener} is.
 */
final class ServedServices implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(ServedServices.class);

  private final EtcdConnection connection;
  private final KeyLayout layout;
  @Nullable private final Set<String> fixed;
  private final ServiceWatcher.Listener sink;
  private final ScheduledExecutorService executor;
  private final Map<String, ServiceWatcher> watchers = new HashMap<>(); // executor only
  @Nullable private ServiceNameWatcher names; // executor only
  private boolean closed; // executor only

  /**
   * @param fixed the services to serve, or null for every service under the prefix
   */
  ServedServices(
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
            names = ServiceNameWatcher.builder(connection)
                .layout(layout)
                .open(current -> executor.execute(() -> followNew(current)));
          }
        });
  }

  private void followNew(Set<String> current) {
    if (closed) {
      return;
    }
    current.stream().filter(s -> !watchers.containsKey(s)).forEach(this::follow);
  }

  private void follow(String service) {
    log.info("Serving service {} over xDS", service);
    watchers.put(service, ServiceWatcher.builder(connection, service).layout(layout).serviceConfig().open(sink));
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
        });
  }
}
