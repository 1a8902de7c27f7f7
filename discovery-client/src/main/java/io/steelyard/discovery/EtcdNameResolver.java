package io.steelyard.discovery;

import com.google.common.annotations.VisibleForTesting;
import com.google.common.net.HostAndPort;
import com.google.common.net.InetAddresses;
import io.grpc.EquivalentAddressGroup;
import io.grpc.NameResolver;
import io.grpc.Status;
import io.grpc.StatusOr;
import io.grpc.SynchronizationContext;
import io.steelyard.balancer.EndpointWeights;
import io.steelyard.registry.ServiceInstance;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
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
 */
final class EtcdNameResolver extends NameResolver {

  private static final Logger logger = LoggerFactory.getLogger(EtcdNameResolver.class);

  /** Where the resolver's snapshots come from; the shared registry in production. */
  @FunctionalInterface
  interface Source {
    AutoCloseable subscribe(ServiceWatcher.Listener listener);
  }

  private final String authority;
  private final String description;
  @Nullable private final Source source;
  @Nullable private final Status invalid;
  private final SynchronizationContext syncContext;

  // Sync context only.
  @Nullable private Listener2 listener;
  @Nullable private AutoCloseable subscription;
  @Nullable private Snapshot pushed;
  private boolean shutdown;

  EtcdNameResolver(String authority, String description, Source source, SynchronizationContext syncContext) {
    this.authority = authority;
    this.description = description;
    this.source = source;
    this.invalid = null;
    this.syncContext = syncContext;
  }

  /** A resolver for a target that cannot work: it reports {@code status} and nothing else. */
  private EtcdNameResolver(String authority, Status invalid, SynchronizationContext syncContext) {
    this.authority = authority;
    this.description = authority;
    this.source = null;
    this.invalid = invalid;
    this.syncContext = syncContext;
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
      subscription = source.subscribe(new ServiceWatcher.Listener() {
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
    if (snapshot.sameInstances(pushed)) {
      pushed = snapshot; // only staleness or revision moved: the channel has nothing to do
      return;
    }
    List<EquivalentAddressGroup> eags = toAddressGroups(snapshot.instances());
    pushed = snapshot;
    Status accepted = listener.onResult2(
        ResolutionResult.newBuilder().setAddressesOrError(StatusOr.fromValue(eags)).build());
    if (!accepted.isOk()) {
      // The watch pushes the next change by itself; nothing to retry here.
      logger.debug("Channel for {} did not accept {} addresses: {}", description, eags.size(), accepted);
    }
  }

  private void handleUnavailable(Throwable cause) {
    if (shutdown || pushed != null) {
      return; // stale-serving: a channel that has addresses keeps them
    }
    listener.onError(Status.UNAVAILABLE
        .withDescription("etcd unreachable and no instance list yet for " + description)
        .withCause(cause));
  }

  /** The watch is live; re-resolution requests from the channel have nothing to add. */
  @Override
  public void refresh() {}

  @Override
  public void shutdown() {
    if (shutdown) {
      return;
    }
    shutdown = true;
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
   * IP literals become resolved addresses. Host names become unresolved addresses, which
   * grpc-netty resolves at connect time (so a name is looked up per connection attempt, off the
   * synchronization context); registries normally hold IP literals.
   */
  @VisibleForTesting
  static List<EquivalentAddressGroup> toAddressGroups(List<ServiceInstance> instances) {
    List<EquivalentAddressGroup> out = new ArrayList<>(instances.size());
    for (ServiceInstance i : instances) {
      HostAndPort hp = HostAndPort.fromString(i.address());
      String host = hp.getHost();
      InetSocketAddress sa = InetAddresses.isInetAddress(host)
          ? new InetSocketAddress(InetAddresses.forString(host), hp.getPort())
          : InetSocketAddress.createUnresolved(host, hp.getPort());
      out.add(EndpointWeights.withWeight(new EquivalentAddressGroup(sa), i.weight(), i.metadata()));
    }
    return out;
  }
}
