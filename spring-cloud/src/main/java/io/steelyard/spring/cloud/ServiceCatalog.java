package io.steelyard.spring.cloud;

import static java.util.Objects.requireNonNull;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import io.steelyard.discovery.ServiceWatcher;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.Validation;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
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
 * <p>Threading: thread-safe. Ownership: closes its watchers and its etcd client on {@link #close}.
 */
final class ServiceCatalog implements AutoCloseable {

  private static final Logger logger = LoggerFactory.getLogger(ServiceCatalog.class);

  private final EtcdConnection etcd;
  private final KeyLayout layout;
  private final Duration debounce;
  private final Duration relistInterval;
  @Nullable private final SlowStartRamp ramp;
  private final Duration firstListTimeout;
  private final LongSupplier nanoTime;
  private final ConcurrentHashMap<String, ServiceView> views = new ConcurrentHashMap<>();
  private final List<ServiceWatcher> watchers = new ArrayList<>();

  @GuardedBy("this")
  @Nullable
  private Client lister;

  @GuardedBy("this")
  private boolean closed;

  ServiceCatalog(
      EtcdConnection etcd, KeyLayout layout, Duration debounce, Duration relistInterval,
      @Nullable SlowStartRamp ramp, Duration firstListTimeout, LongSupplier nanoTime) {
    this.etcd = requireNonNull(etcd, "etcd");
    this.layout = requireNonNull(layout, "layout");
    this.debounce = requireNonNull(debounce, "debounce");
    this.relistInterval = requireNonNull(relistInterval, "relistInterval");
    this.ramp = ramp;
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
    ServiceView view = new ServiceView(service, ramp, nanoTime);
    ServiceWatcher watcher = ServiceWatcher.builder(etcd, service)
        .layout(layout)
        .debounce(debounce)
        .relistInterval(relistInterval)
        .open(view);
    synchronized (this) {
      if (closed) {
        watcher.close();
        throw new IllegalStateException("the service catalog is closed");
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
   * The names of the services that have at least one key in etcd now, sorted: one keys-only
   * read of the prefix (Spring Cloud asks for this rarely: the discovery health indicator, tools).
   */
  List<String> services() {
    String prefix = layout.prefix() + "/";
    ByteSequence key = ByteSequence.from(prefix, StandardCharsets.UTF_8);
    GetOption keysOnly = GetOption.builder().isPrefix(true).withKeysOnly(true).build();
    try {
      List<KeyValue> kvs = lister().getKVClient().get(key, keysOnly)
          .get(etcd.connectTimeout().toMillis(), TimeUnit.MILLISECONDS).getKvs();
      TreeSet<String> names = new TreeSet<>();
      for (KeyValue kv : kvs) {
        String rest = kv.getKey().toString(StandardCharsets.UTF_8).substring(prefix.length());
        int slash = rest.indexOf('/');
        if (slash > 0) {
          String name = rest.substring(0, slash);
          if (isServiceName(name)) {
            names.add(name);
          }
        }
      }
      return List.copyOf(names);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return List.of();
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("Cannot list services under " + prefix + " in etcd "
          + etcd.endpointsString() + ": " + e.getMessage(), e);
    }
  }

  private static boolean isServiceName(String name) {
    if (name.startsWith(".")) {
      // The registry's own bookkeeping (drain notes) lives under dot names.
      return false;
    }
    try {
      Validation.checkServiceName(name);
      return true;
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  private synchronized Client lister() {
    if (closed) {
      throw new IllegalStateException("the service catalog is closed");
    }
    if (lister == null) {
      lister = etcd.connect();
    }
    return lister;
  }

  @Override
  public void close() {
    List<ServiceWatcher> toClose;
    Client client;
    synchronized (this) {
      closed = true;
      toClose = new ArrayList<>(watchers);
      watchers.clear();
      client = lister;
      lister = null;
    }
    toClose.forEach(ServiceWatcher::close);
    if (client != null) {
      client.close();
    }
  }
}
