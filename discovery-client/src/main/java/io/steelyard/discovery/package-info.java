/**
 * The steelyard discovery client: service instances registered in etcd, as a live list.
 *
 * <ul>
 *   <li>{@link io.steelyard.discovery.EtcdNameResolverProvider}: the {@code etcd} scheme for
 *       grpc-java ({@code etcd:///SERVICE}, {@code etcd:///SERVICE?endpoints=host:2379,host:2379}),
 *       registered through {@code META-INF/services}; addresses carry their weight and metadata
 *       for the {@code balancer} module's policies.
 *   <li>{@link io.steelyard.discovery.ServiceWatcher}: the same watch for code that is not a
 *       gRPC channel, delivering {@link io.steelyard.discovery.Snapshot}s.
 *   <li>{@link io.steelyard.discovery.DiscoveryStats}: process-wide counters (watches, clients,
 *       staleness, malformed values).
 * </ul>
 *
 * <p>Everything else in this package is package-private and carries no compatibility promise.
 * See {@code docs/discovery.md} for targets, configuration, staleness and threading.
 */
@javax.annotation.ParametersAreNonnullByDefault
package io.steelyard.discovery;
