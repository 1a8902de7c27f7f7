package io.steelyard.xds;

import static java.util.Objects.requireNonNull;

import io.envoyproxy.controlplane.cache.VersionedResource;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.steelyard.registry.ServiceInstance;
import java.util.List;

/**
 * The xDS resources of one service, each with a version that is a hash of its own bytes.
 * Immutable.
 */
record ServiceResources(
    String service,
    List<ServiceInstance> instances,
    VersionedResource<Listener> listener,
    VersionedResource<Cluster> cluster,
    VersionedResource<ClusterLoadAssignment> endpoints) {

  ServiceResources {
    requireNonNull(service, "service");
    instances = List.copyOf(instances);
    requireNonNull(listener, "listener");
    requireNonNull(cluster, "cluster");
    requireNonNull(endpoints, "endpoints");
  }

  static ServiceResources of(String service, List<ServiceInstance> instances) {
    Listener listener = XdsResources.listener(service);
    Cluster cluster = XdsResources.cluster(service);
    ClusterLoadAssignment cla = XdsResources.loadAssignment(service, instances);
    return new ServiceResources(
        service,
        instances,
        VersionedResource.create(listener, XdsResources.version(List.of(listener))),
        VersionedResource.create(cluster, XdsResources.version(List.of(cluster))),
        VersionedResource.create(cla, XdsResources.version(List.of(cla))));
  }

  /**
   * The service with the locality weights given ({@link ZoneWeights}): this one when the
   * assignment is byte for byte the same; Listener and Cluster are reused as they are.
   */
  static ServiceResources of(String service, List<ServiceInstance> instances, int[] weights) {
    return of(service, List.of()).withAssignment(instances, weights);
  }

  ServiceResources withAssignment(List<ServiceInstance> newInstances, int[] weights) {
    ClusterLoadAssignment cla = XdsResources.loadAssignment(service, newInstances, weights);
    String version = XdsResources.version(List.of(cla));
    if (version.equals(endpoints.version()) && newInstances.equals(instances)) {
      return this;
    }
    return new ServiceResources(
        service, newInstances, listener, cluster, VersionedResource.create(cla, version));
  }

  /** The same service with other instances; Listener and Cluster are reused as they are. */
  ServiceResources withInstances(List<ServiceInstance> newInstances) {
    if (newInstances.equals(instances)) {
      return this;
    }
    ClusterLoadAssignment cla = XdsResources.loadAssignment(service, newInstances);
    return new ServiceResources(
        service,
        newInstances,
        listener,
        cluster,
        VersionedResource.create(cla, XdsResources.version(List.of(cla))));
  }
}
