package io.steelyard.xds;

import static java.util.Objects.requireNonNull;

import com.google.common.collect.ImmutableSortedMap;
import io.envoyproxy.controlplane.cache.VersionedResource;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.steelyard.registry.ServiceInstance;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import javax.annotation.Nullable;

/**
 * The xDS resources of one service as served to one group of callers: its Listener (the routes
 * inline), and its clusters with their assignments ({@code SERVICE}, plus {@code SERVICE/i} per
 * split entry: {@link XdsRoutes}), each with a version that is a hash of its own bytes.
 * Immutable.
 */
record ServiceResources(
    String service,
    List<ServiceInstance> instances,
    VersionedResource<Listener> listener,
    ImmutableSortedMap<String, VersionedResource<Cluster>> clusters,
    ImmutableSortedMap<String, VersionedResource<ClusterLoadAssignment>> endpoints) {

  ServiceResources {
    requireNonNull(service, "service");
    instances = List.copyOf(instances);
    requireNonNull(listener, "listener");
    requireNonNull(clusters, "clusters");
    requireNonNull(endpoints, "endpoints");
  }

  /** The service without a stored config, every instance at its registered weight. */
  static ServiceResources of(String service, List<ServiceInstance> instances) {
    return build(service, instances, MappedConfig.NONE, XdsResources::registeredWeights, null);
  }

  /**
   * The service's resources under {@code config}, each cluster's locality weights from {@code
   * weights} (given the cluster's instances: {@link ZoneWeights}); {@code before} itself when
   * every resource is byte for byte the same, so that an unchanged service publishes nothing.
   */
  static ServiceResources build(
      String service,
      List<ServiceInstance> instances,
      MappedConfig config,
      Function<List<ServiceInstance>, int[]> weights,
      @Nullable ServiceResources before) {
    Map<String, List<ServiceInstance>> members = XdsRoutes.clusters(service, instances, config);
    Listener listener = XdsResources.listener(service, XdsRoutes.routeConfiguration(service, config, members));
    ImmutableSortedMap.Builder<String, VersionedResource<Cluster>> clusters = ImmutableSortedMap.naturalOrder();
    ImmutableSortedMap.Builder<String, VersionedResource<ClusterLoadAssignment>> endpoints =
        ImmutableSortedMap.naturalOrder();
    for (Map.Entry<String, List<ServiceInstance>> cluster : members.entrySet()) {
      String name = cluster.getKey();
      clusters.put(name, versioned(XdsResources.cluster(name, config), before == null ? null : before.clusters.get(name)));
      ClusterLoadAssignment cla = XdsResources.loadAssignment(name, cluster.getValue(), weights.apply(cluster.getValue()));
      endpoints.put(name, versioned(cla, before == null ? null : before.endpoints.get(name)));
    }
    ServiceResources after = new ServiceResources(service, instances,
        versioned(listener, before == null ? null : before.listener), clusters.build(), endpoints.build());
    return before != null && before.sameAs(after) ? before : after;
  }

  /** {@code resource} with its version, or {@code before} when that is the same resource. */
  private static <T extends com.google.protobuf.Message> VersionedResource<T> versioned(
      T resource, @Nullable VersionedResource<T> before) {
    if (before != null && before.resource().equals(resource)) {
      return before;
    }
    return VersionedResource.create(resource, XdsResources.version(List.of(resource)));
  }

  private boolean sameAs(ServiceResources other) {
    return instances.equals(other.instances)
        && listener == other.listener
        && clusters.equals(other.clusters)
        && endpoints.equals(other.endpoints);
  }

  /** The assignment of the service's own cluster, {@code SERVICE}. */
  VersionedResource<ClusterLoadAssignment> assignment() {
    return endpoints.get(service);
  }

  /** The service's own cluster, {@code SERVICE}. */
  VersionedResource<Cluster> cluster() {
    return clusters.get(service);
  }
}
