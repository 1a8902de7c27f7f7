package io.steelyard.xds;

import com.google.common.collect.ImmutableList;
import com.google.common.collect.ImmutableSortedMap;
import com.google.common.hash.Hasher;
import com.google.common.hash.Hashing;
import io.envoyproxy.controlplane.cache.ResourceVersionResolver;
import io.envoyproxy.controlplane.cache.SnapshotResources;
import io.envoyproxy.controlplane.cache.VersionedResource;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.envoyproxy.envoy.extensions.transport_sockets.tls.v3.Secret;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.Function;

/**
 * What the control plane serves at one moment: the resources of every selected service (a
 * service's split clusters among them, {@link XdsRoutes}), with a version per resource and, for a request, a version of just the names it asks for.
 *
 * <p>The version a state-of-the-world client sees for its request is a hash of the requested
 * names and their resources' versions, so a change to one service changes the version only for
 * the clients subscribed to it (the cache then answers only those), and two replicas holding the
 * same instances give the same versions. A wildcard request (Envoy's LDS/CDS) sees a hash over
 * every resource of the type. Delta clients get per-resource versions directly.
 */
final class XdsSnapshot extends io.envoyproxy.controlplane.cache.v3.Snapshot {

  private final ImmutableSortedMap<String, ServiceResources> services;
  private final long revision;
  private final SnapshotResources<Cluster> clusters;
  private final SnapshotResources<ClusterLoadAssignment> endpoints;
  private final SnapshotResources<Listener> listeners;
  private static final SnapshotResources<RouteConfiguration> NO_ROUTES =
      SnapshotResources.create(ImmutableList.of(), "");
  private static final SnapshotResources<Secret> NO_SECRETS =
      SnapshotResources.create(ImmutableList.of(), "");

  XdsSnapshot(Map<String, ServiceResources> services, long revision) {
    this.services = ImmutableSortedMap.copyOf(services);
    this.revision = revision;
    this.clusters = resources(ServiceResources::clusters);
    this.endpoints = resources(ServiceResources::endpoints);
    this.listeners = resources(s -> Map.of(s.service(), s.listener()));
  }

  private <T extends com.google.protobuf.Message> SnapshotResources<T> resources(
      Function<ServiceResources, Map<String, VersionedResource<T>>> pick) {
    ImmutableSortedMap.Builder<String, VersionedResource<T>> byName =
        ImmutableSortedMap.naturalOrder();
    for (ServiceResources s : services.values()) {
      byName.putAll(pick.apply(s));
    }
    ImmutableSortedMap<String, VersionedResource<T>> map = byName.build();
    return SnapshotResources.create(map.values(), new Versions<>(map));
  }

  /** The selected services, by name. */
  Map<String, ServiceResources> services() {
    return services;
  }

  /** The newest etcd revision among the service views this snapshot was built from. */
  long revision() {
    return revision;
  }

  @Override
  public SnapshotResources<Cluster> clusters() {
    return clusters;
  }

  @Override
  public SnapshotResources<ClusterLoadAssignment> endpoints() {
    return endpoints;
  }

  @Override
  public SnapshotResources<Listener> listeners() {
    return listeners;
  }

  @Override
  public SnapshotResources<RouteConfiguration> routes() {
    return NO_ROUTES;
  }

  @Override
  public SnapshotResources<Secret> secrets() {
    return NO_SECRETS;
  }

  /**
   * The base class and the v3 class declare this with return types Java cannot reconcile in a
   * subclass (the library's own subclass is generated); the raw type overrides both.
   */
  @Override
  @SuppressWarnings("rawtypes")
  public Map versionedResources(io.envoyproxy.controlplane.cache.Resources.ResourceType resourceType) {
    return versionedResourcesV3(resourceType);
  }

  private Map<String, ?> versionedResourcesV3(
      io.envoyproxy.controlplane.cache.Resources.ResourceType resourceType) {
    switch (resourceType) {
      case CLUSTER:
        return clusters.versionedResources();
      case ENDPOINT:
        return endpoints.versionedResources();
      case LISTENER:
        return listeners.versionedResources();
      default:
        return Map.of();
    }
  }

  /** The version of a request naming a resource that is not served (yet). */
  static final String MISSING = "";

  /** Versions of name sets, computed from the per-resource versions. */
  private static final class Versions<T extends com.google.protobuf.Message>
      implements ResourceVersionResolver {
    private final ImmutableSortedMap<String, VersionedResource<T>> byName;
    private final String all;

    Versions(ImmutableSortedMap<String, VersionedResource<T>> byName) {
      this.byName = byName;
      this.all = hash(byName.keySet());
    }

    /**
     * The version of the requested names; {@link #MISSING} while any of them is not served.
     *
     * <p>The cache drops a waiting ADS watch whose version differs from the snapshot's even when
     * it cannot answer it because a requested name is missing (SimpleCache 1.0.49), and the client
     * would then never hear of the resource. A client asking for a name for the first time sends
     * the empty version, so answering "" keeps its watch open until the name appears.
     */
    @Override
    public String version(List<String> resourceNames) {
      if (resourceNames.isEmpty()) {
        return all;
      }
      for (String name : resourceNames) {
        if (!byName.containsKey(name)) {
          return MISSING;
        }
      }
      return hash(new TreeSet<>(resourceNames));
    }

    private String hash(Iterable<String> names) {
      Hasher hasher = Hashing.sha256().newHasher();
      for (String name : names) {
        VersionedResource<T> r = byName.get(name);
        hasher.putString(name, StandardCharsets.UTF_8).putByte((byte) 0);
        hasher.putString(r == null ? "-" : r.version(), StandardCharsets.UTF_8).putByte((byte) 0);
      }
      return hasher.hash().toString().substring(0, 16);
    }
  }
}
