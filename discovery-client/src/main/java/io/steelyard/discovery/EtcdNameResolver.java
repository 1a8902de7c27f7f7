package io.steelyard.discovery;

import com.google.common.annotations.VisibleForTesting;
import com.google.common.net.HostAndPort;
import com.google.common.net.InetAddresses;
import io.grpc.Attributes;
import io.grpc.EquivalentAddressGroup;
import io.grpc.NameResolver;
import io.grpc.NameResolver.ConfigOrError;
import io.grpc.NameResolver.ServiceConfigParser;
import io.grpc.Status;
import io.grpc.StatusOr;
import io.grpc.SynchronizationContext;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.registry.Localities;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.ServiceInstance;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.function.Consumer;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code etcd:} resolver of one channel: a thin subscriber of the process-wide shared
 * watcher of its service. Snapshots arrive on the discovery thread and hop onto the channel's
 * {@link SynchronizationContext}; all state below is touched only there.
 *
 * <p>Stale-serving: once it has pushed a list, it never reports an error nor pushes an empty
 * list because etcd went away (the watcher keeps the last list). An empty list is pushed only
 * when etcd itself lists no instance.
 *
 * <p>Service config: each result carries the service config {@link ServiceConfigChoice} picks from
 * the one stored in the registry (followed by the service's shared {@link ServiceConfigWatcher}). The
 * first result waits for the registry's answer about it (or its failure), so a channel never
 * starts on a policy it is about to leave; a config change alone pushes the same addresses again
 * with the new config.
 */
final class EtcdNameResolver extends NameResolver {

  private static final Logger logger = LoggerFactory.getLogger(EtcdNameResolver.class);

  /** Where the resolver's snapshots come from; the shared registry in production. */
  @FunctionalInterface
  interface Source {
    AutoCloseable subscribe(WatchListener listener);
  }

  private final String authority;
  private final String description;
  @Nullable private final Source source;
  @Nullable private final Status invalid;
  private final SynchronizationContext syncContext;
  private final Executor dnsExecutor;
  private final ServiceConfigChoice serviceConfig;
  /** The resolution attributes: the caller's zone when known, else empty. */
  private final Attributes attributes;

  static final long MIN_DNS_REFRESH_MILLIS = 5_000;

  /**
   * Where host-name lookups run when the channel offers no offload executor (grpc-java's
   * channels always do; a hand-made {@code NameResolver.Args} may not): a short-lived daemon
   * thread per batch of lookups. Lookups are rare (a name's first appearance, and re-resolution
   * at most every {@value #MIN_DNS_REFRESH_MILLIS} ms), so a pool would mostly sit idle.
   */
  private static final Executor THREAD_PER_LOOKUP = task -> {
    Thread t = new Thread(task, "steelyard-discovery-dns");
    t.setDaemon(true);
    t.start();
  };

  // Sync context only.
  @Nullable private Listener2 listener;
  @Nullable private AutoCloseable subscription;
  @Nullable private ServiceConfigWatcher configWatcher;
  @Nullable private Consumer<StoredServiceConfig> configListener;
  @Nullable private List<EquivalentAddressGroup> pushedGroups;
  @Nullable private Snapshot pushed;
  @Nullable private Snapshot latest;
  private boolean resolving;
  private final Map<String, List<InetAddress>> dnsCache = new HashMap<>();
  /**
   * The address group of each IP-literal instance pushed, by identity: the watcher keeps the same
   * {@code ServiceInstance} object while its key is unchanged, so a weight change in a service of
   * 100,000 instances builds one group, not 100,000. Instances gone stay until the map is twice
   * the size of the last push, then it is rebuilt: rebuilding it on every push cost more than
   * the groups it saved.
   */
  private Map<ServiceInstance, EquivalentAddressGroup> groups = new IdentityHashMap<>();
  private long lastDnsRefreshNanos;
  private boolean dnsRefreshed; // the next push must look host names up again
  private boolean shutdown;

  /**
   * @param dnsExecutor where blocking host-name lookups run: the channel's offload executor
   *     ({@link NameResolver.Args#getOffloadExecutor()}); null for a daemon thread per lookup
   */
  EtcdNameResolver(
      String authority,
      String description,
      Source source,
      SynchronizationContext syncContext,
      @Nullable Executor dnsExecutor) {
    this(authority, description, source, syncContext, dnsExecutor, null, null, null);
  }

  /**
   * @param configParser the channel's service config parser; null hands grpc no service config
   * @param fallbackConfig the service config while the registry holds none; null for none
   * @param callerZone the caller's zone, told to the balancer ({@link Localities#CALLER_ZONE})
   *     with every resolution; null: none
   */
  EtcdNameResolver(
      String authority,
      String description,
      Source source,
      SynchronizationContext syncContext,
      @Nullable Executor dnsExecutor,
      @Nullable ServiceConfigParser configParser,
      @Nullable Map<String, ?> fallbackConfig,
      @Nullable String callerZone) {
    this.attributes =
        callerZone == null
            ? Attributes.EMPTY
            : Attributes.newBuilder().set(Localities.CALLER_ZONE, callerZone).build();
    this.authority = authority;
    this.description = description;
    this.source = source;
    this.invalid = null;
    this.syncContext = syncContext;
    this.dnsExecutor = dnsExecutor != null ? dnsExecutor : THREAD_PER_LOOKUP;
    this.serviceConfig = new ServiceConfigChoice(
        authority, configParser, fallbackConfig,
        revision -> configWatcher == null || configWatcher.firstToReport(revision),
        () -> configWatcher != null && configWatcher.firstToAnnounceFallback(),
        new ServiceConfigChoice.Memory() {
          @Override
          public void accepted(String json, long modRevision) {
            if (configWatcher != null) {
              configWatcher.accepted(json, modRevision);
            }
          }

          @Override
          @Nullable
          public ServiceConfigChoice.Accepted lastAccepted() {
            return configWatcher == null ? null : configWatcher.lastAccepted();
          }
        });
  }

  /** A resolver for a target that cannot work: it reports {@code status} and nothing else. */
  private EtcdNameResolver(String authority, Status invalid, SynchronizationContext syncContext) {
    this.authority = authority;
    this.description = authority;
    this.source = null;
    this.invalid = invalid;
    this.attributes = Attributes.EMPTY;
    this.syncContext = syncContext;
    this.dnsExecutor = THREAD_PER_LOOKUP; // never used: it resolves nothing
    this.serviceConfig = new ServiceConfigChoice(authority, null, null, revision -> false);
  }

  static EtcdNameResolver failing(String authority, Status status, SynchronizationContext syncContext) {
    return new EtcdNameResolver(authority, status, syncContext);
  }

  @Override
  public String getServiceAuthority() {
    return authority;
  }

  @Override
  public void start(Listener2 listener) {
    syncContext.throwIfNotInThisSynchronizationContext();
    if (this.listener != null) {
      throw new IllegalStateException("already started");
    }
    this.listener = listener;
    if (invalid != null) {
      listener.onError(invalid);
      return;
    }
    try {
      subscription = source.subscribe(new WatchListener() {
        @Override
        public void onSnapshot(Snapshot snapshot) {
          syncContext.execute(() -> handleSnapshot(snapshot));
        }

        @Override
        public void onUnavailable(Throwable cause) {
          syncContext.execute(() -> handleUnavailable(cause));
        }

        @Override
        public String toString() {
          return "EtcdNameResolver{" + description + "}";
        }
      });
      if (subscription instanceof WatchRegistry.Subscription s) {
        configWatcher = s.config();
        configListener = config -> syncContext.execute(() -> handleConfig(config));
        configWatcher.addListener(configListener);
      } else {
        serviceConfig.update(StoredServiceConfig.ABSENT); // a source without a registry config
      }
    } catch (RuntimeException e) {
      listener.onError(Status.UNAVAILABLE
          .withDescription("cannot start watching " + description + ": " + e.getMessage())
          .withCause(e));
    }
  }

  private void handleSnapshot(Snapshot snapshot) {
    if (shutdown) {
      return;
    }
    latest = snapshot;
    pushLatest(false);
  }

  private void handleConfig(StoredServiceConfig config) {
    if (shutdown) {
      return;
    }
    boolean changed = serviceConfig.update(config);
    if (pushed == null) {
      pushLatest(false); // the first push may have waited for this
    } else if (changed) {
      pushLatest(true);
    }
  }

  /**
   * Pushes {@link #latest} unless the channel already has its instances. Host names not yet
   * looked up are resolved first, off the synchronization context; the push then happens when
   * the lookups come back (with whatever snapshot is latest by then).
   */
  private void pushLatest(boolean force) {
    Snapshot snapshot = latest;
    if (snapshot == null || resolving || !serviceConfig.settled()) {
      return; // a lookup in flight, or the registry's config answer, pushes when it comes
    }
    if (!force && snapshot.sameInstances(pushed)) {
      pushed = snapshot; // only staleness or revision moved: the channel has nothing to do
      return;
    }
    if (pushedGroups != null && !dnsRefreshed && snapshot.sameInstances(pushed)) {
      publish(snapshot, pushedGroups, false); // the service config alone changed
      return;
    }
    List<String> unknown = new ArrayList<>();
    for (ServiceInstance i : snapshot.instances()) {
      if (groups.containsKey(i)) {
        continue; // an IP literal, parsed before
      }
      String host = HostAndPort.fromString(i.address()).getHost();
      if (!InetAddresses.isInetAddress(host) && !dnsCache.containsKey(host)) {
        unknown.add(host);
      }
    }
    if (!unknown.isEmpty()) {
      resolving = true;
      dnsExecutor.execute(() -> {
        Map<String, List<InetAddress>> found = lookUp(unknown);
        syncContext.execute(() -> {
          resolving = false;
          if (shutdown) {
            return;
          }
          dnsCache.putAll(found);
          pushLatest(true);
        });
      });
      return;
    }
    List<EquivalentAddressGroup> eags = toAddressGroups(snapshot.instances(), dnsCache, groups);
    if (groups.size() > 2 * eags.size() + 64) {
      Map<ServiceInstance, EquivalentAddressGroup> live = new IdentityHashMap<>(eags.size());
      for (ServiceInstance i : snapshot.instances()) {
        EquivalentAddressGroup g = groups.get(i);
        if (g != null) {
          live.put(i, g);
        }
      }
      groups = live;
    }
    dnsRefreshed = false;
    publish(snapshot, eags, true);
  }

  /**
   * Hands grpc {@code eags} with the service config in force; {@code instancesChanged} is false
   * when only the config did, so the instance propagation meter does not count that push.
   */
  private void publish(Snapshot snapshot, List<EquivalentAddressGroup> eags, boolean instancesChanged) {
    pushed = snapshot;
    pushedGroups = eags;
    ResolutionResult.Builder result =
        ResolutionResult.newBuilder()
            .setAddressesOrError(StatusOr.fromValue(eags))
            .setAttributes(attributes);
    ConfigOrError config = serviceConfig.effective();
    if (config != null) {
      result.setServiceConfig(config);
    }
    Status accepted = listener.onResult2(result.build());
    if (!accepted.isOk()) {
      // The watch pushes the next change by itself; nothing to retry here.
      logger.debug("Channel for {} did not accept {} addresses: {}", description, eags.size(), accepted);
    } else if (instancesChanged && subscription instanceof WatchRegistry.Subscription s) {
      s.watcher().propagated(snapshot); // the balancer holds it now (onResult2 ran it)
    }
  }

  /** Blocking DNS lookups, on the DNS executor (never the sync context or the discovery thread). A name that fails maps to an empty list. */
  private Map<String, List<InetAddress>> lookUp(List<String> hosts) {
    Map<String, List<InetAddress>> out = new HashMap<>();
    for (String host : hosts) {
      try {
        out.put(host, List.of(InetAddress.getAllByName(host)));
      } catch (UnknownHostException | SecurityException e) {
        logger.warn("Cannot resolve host {} of {}; skipping its instances until it resolves",
            host, description, e);
        out.put(host, List.of());
      }
    }
    return out;
  }

  private void handleUnavailable(Throwable cause) {
    if (shutdown || pushed != null) {
      return; // stale-serving: a channel that has addresses keeps them
    }
    // The watcher classified the failure; a refusal is named as one, never as unreachability.
    String why = cause instanceof RegistryException e && e.kind().refused()
        ? "etcd refused to list " + description + ": " + e.getMessage()
        : "etcd unreachable and no instance list yet for " + description;
    listener.onError(Status.UNAVAILABLE.withDescription(why).withCause(cause));
  }

  /**
   * The watch is live, so this only re-resolves host names (at most every {@value
   * #MIN_DNS_REFRESH_MILLIS} ms): grpc asks for it when connections fail, which is when a
   * name may have moved.
   */
  @Override
  public void refresh() {
    if (shutdown || dnsCache.isEmpty()) {
      return;
    }
    long now = System.nanoTime();
    if (lastDnsRefreshNanos != 0 && now - lastDnsRefreshNanos < MIN_DNS_REFRESH_MILLIS * 1_000_000) {
      return;
    }
    lastDnsRefreshNanos = now;
    dnsCache.clear();
    dnsRefreshed = true;
    pushLatest(true);
  }

  @Override
  public void shutdown() {
    if (shutdown) {
      return;
    }
    shutdown = true;
    if (configWatcher != null) {
      configWatcher.removeListener(configListener);
    }
    if (subscription != null) {
      try {
        subscription.close();
      } catch (Exception e) {
        logger.debug("Releasing the watch of {} failed", description, e);
      }
      subscription = null;
    }
  }

  /**
   * IP literals become addresses as they are; host names become one group of all their resolved
   * addresses (grpc-netty does not resolve unresolved addresses itself). An instance whose
   * name did not resolve is left out.
   */
  @VisibleForTesting
  static List<EquivalentAddressGroup> toAddressGroups(
      List<ServiceInstance> instances, Map<String, List<InetAddress>> dns) {
    return toAddressGroups(instances, dns, new IdentityHashMap<>());
  }

  /**
   * As above, reusing the group of an IP-literal instance found (by identity) in {@code groups}
   * and adding the groups of new IP-literal instances to it.
   */
  private static List<EquivalentAddressGroup> toAddressGroups(
      List<ServiceInstance> instances,
      Map<String, List<InetAddress>> dns,
      Map<ServiceInstance, EquivalentAddressGroup> groups) {
    List<EquivalentAddressGroup> out = new ArrayList<>(instances.size());
    for (ServiceInstance i : instances) {
      EquivalentAddressGroup known = groups.get(i);
      if (known != null) {
        out.add(known);
        continue;
      }
      HostAndPort hp = HostAndPort.fromString(i.address());
      String host = hp.getHost();
      if (InetAddresses.isInetAddress(host)) {
        EquivalentAddressGroup group = EndpointWeights.withWeight(
            new EquivalentAddressGroup(new InetSocketAddress(InetAddresses.forString(host), hp.getPort())),
            i.weight(), i.metadata());
        out.add(group);
        groups.put(i, group);
        continue;
      }
      // Host names are not cached here: their addresses follow the DNS cache, refreshed apart.
      List<InetAddress> resolved = dns.getOrDefault(host, List.of());
      if (resolved.isEmpty()) {
        continue;
      }
      List<SocketAddress> addrs = new ArrayList<>(resolved.size());
      for (InetAddress a : resolved) {
        addrs.add(new InetSocketAddress(a, hp.getPort()));
      }
      out.add(EndpointWeights.withWeight(new EquivalentAddressGroup(addrs), i.weight(), i.metadata()));
    }
    return out;
  }
}
