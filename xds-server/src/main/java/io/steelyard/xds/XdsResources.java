package io.steelyard.xds;

import static java.util.Objects.requireNonNull;

import com.google.common.hash.Hasher;
import com.google.common.hash.Hashing;
import com.google.common.net.HostAndPort;
import com.google.protobuf.Any;
import com.google.protobuf.Duration;
import com.google.protobuf.Struct;
import com.google.protobuf.UInt32Value;
import com.google.protobuf.Value;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.Address;
import io.envoyproxy.envoy.config.core.v3.AggregatedConfigSource;
import io.envoyproxy.envoy.config.core.v3.ApiVersion;
import io.envoyproxy.envoy.config.core.v3.ConfigSource;
import io.envoyproxy.envoy.config.core.v3.HealthStatus;
import io.envoyproxy.envoy.config.core.v3.Http2ProtocolOptions;
import io.envoyproxy.envoy.config.core.v3.Locality;
import io.envoyproxy.envoy.config.core.v3.Metadata;
import io.envoyproxy.envoy.config.core.v3.SocketAddress;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.endpoint.v3.Endpoint;
import io.envoyproxy.envoy.config.endpoint.v3.LbEndpoint;
import io.envoyproxy.envoy.config.endpoint.v3.LocalityLbEndpoints;
import io.envoyproxy.envoy.config.listener.v3.ApiListener;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.envoyproxy.envoy.extensions.filters.http.router.v3.Router;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter;
import io.envoyproxy.envoy.extensions.upstreams.http.v3.HttpProtocolOptions;
import io.steelyard.registry.Localities;
import io.steelyard.registry.ServiceInstance;
import java.util.List;
import java.util.Map;

/**
 * How one registered service becomes xDS resources: a Listener, a Cluster and a
 * ClusterLoadAssignment, each named after the service, so that a client dials {@code
 * xds:///SERVICE}.
 *
 * <p>The per-instance share travels in the <em>locality</em> weight: every instance is a
 * locality of its own ({@code region}/{@code zone} from its metadata, {@code sub_zone} = its
 * address) whose {@code load_balancing_weight} is the registered weight. gRPC's xDS clients
 * (Java, C-core, Node) honour locality weights through {@code weighted_target}, while their
 * {@code round_robin} child ignores the endpoint weight; the endpoint weight is set as well, for
 * Envoy and for the clients' ring hash. A drained instance (weight 0) stays in the assignment as
 * {@code DRAINING} with weight 1 (xDS requires weights of at least 1): clients pick only {@code
 * HEALTHY}/{@code UNKNOWN} endpoints, Envoy lets its open requests finish. See docs/xds.md and
 * docs/localities.md.
 *
 * <p>Output depends only on the input: the same instances give byte-identical resources on
 * every replica, and {@link #version} is a hash of those bytes.
 */
final class XdsResources {

  /** Endpoint metadata namespace holding the instance's metadata as strings. */
  static final String METADATA_NAMESPACE = "io.steelyard";
  static final String ROUTER_FILTER = "envoy.filters.http.router";
  static final String HTTP_PROTOCOL_OPTIONS = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions";
  /** Envoy forwards gRPC only over HTTP/2 upstreams; gRPC clients ignore the option. */
  private static final Any HTTP2_UPSTREAM =
      Any.pack(
          HttpProtocolOptions.newBuilder()
              .setExplicitHttpConfig(
                  HttpProtocolOptions.ExplicitHttpConfig.newBuilder()
                      .setHttp2ProtocolOptions(Http2ProtocolOptions.getDefaultInstance()))
              .build());
  /** Envoy wants a connect timeout; gRPC clients ignore it. */
  private static final Duration CONNECT_TIMEOUT = Duration.newBuilder().setSeconds(5).build();

  private XdsResources() {}

  /** The listener of {@code service} with no stored config: every call to cluster {@code service}. */
  static Listener listener(String service) {
    return listener(service, XdsRoutes.routeConfiguration(service, MappedConfig.NONE, Map.of()));
  }

  /** The API listener of {@code service}, its route configuration inline ({@link XdsRoutes}). */
  static Listener listener(String service, RouteConfiguration routes) {
    HttpConnectionManager hcm =
        HttpConnectionManager.newBuilder()
            .setStatPrefix(service)
            .setRouteConfig(routes)
            .addHttpFilters(
                HttpFilter.newBuilder()
                    .setName(ROUTER_FILTER)
                    .setTypedConfig(Any.pack(Router.getDefaultInstance())))
            .build();
    return Listener.newBuilder()
        .setName(service)
        .setApiListener(ApiListener.newBuilder().setApiListener(Any.pack(hcm)))
        .build();
  }

  static Cluster cluster(String service) {
    return cluster(service, MappedConfig.NONE);
  }

  /**
   * The EDS cluster {@code name} (a service's, or one of its split clusters) with the config's
   * {@code outlier_detection} and {@code load_balancing_policy} when it has them.
   */
  static Cluster cluster(String name, MappedConfig config) {
    Cluster.Builder cluster = Cluster.newBuilder()
        .setName(name)
        .setType(Cluster.DiscoveryType.EDS)
        .setEdsClusterConfig(
            Cluster.EdsClusterConfig.newBuilder()
                .setEdsConfig(
                    ConfigSource.newBuilder()
                        .setAds(AggregatedConfigSource.getDefaultInstance())
                        .setResourceApiVersion(ApiVersion.V3)))
        .setLbPolicy(Cluster.LbPolicy.ROUND_ROBIN)
        .setConnectTimeout(CONNECT_TIMEOUT)
        .putTypedExtensionProtocolOptions(HTTP_PROTOCOL_OPTIONS, HTTP2_UPSTREAM);
    if (config.outlierDetection() != null) {
      cluster.setOutlierDetection(config.outlierDetection());
    }
    if (config.loadBalancingPolicy() != null) {
      cluster.setLoadBalancingPolicy(config.loadBalancingPolicy());
    }
    return cluster.build();
  }

  /**
   * The assignment of {@code service}: one locality per instance, in the order given (the
   * watcher's order, by address).
   */
  static ClusterLoadAssignment loadAssignment(String service, List<ServiceInstance> instances) {
    return loadAssignment(service, instances, registeredWeights(instances));
  }

  /** The registered weights, at least 1: the locality weights without zones or a ramp. */
  static int[] registeredWeights(List<ServiceInstance> instances) {
    int[] weights = new int[instances.size()];
    for (int i = 0; i < weights.length; i++) {
      weights[i] = Math.max(1, instances.get(i).weight());
    }
    return weights;
  }

  /**
   * The assignment of {@code service} with the locality (and endpoint) weights given, one per
   * instance and each at least 1, as {@link ZoneWeights} computes them for a caller's zone.
   */
  static ClusterLoadAssignment loadAssignment(
      String service, List<ServiceInstance> instances, int[] weights) {
    ClusterLoadAssignment.Builder cla = ClusterLoadAssignment.newBuilder().setClusterName(service);
    for (int i = 0; i < weights.length; i++) {
      cla.addEndpoints(localityOf(instances.get(i), weights[i]));
    }
    return cla.build();
  }

  static LocalityLbEndpoints localityOf(ServiceInstance instance) {
    return localityOf(instance, Math.max(1, instance.weight()));
  }

  /** One instance's locality with weight {@code served} (at least 1): see the class comment. */
  static LocalityLbEndpoints localityOf(ServiceInstance instance, int served) {
    boolean drained = instance.weight() == 0;
    UInt32Value weight = UInt32Value.of(drained ? 1 : Math.max(1, served));
    HostAndPort hostPort = HostAndPort.fromString(instance.address());
    LbEndpoint.Builder endpoint =
        LbEndpoint.newBuilder()
            .setEndpoint(
                Endpoint.newBuilder()
                    .setAddress(
                        Address.newBuilder()
                            .setSocketAddress(
                                SocketAddress.newBuilder()
                                    .setAddress(hostPort.getHost())
                                    .setPortValue(hostPort.getPort()))))
            .setHealthStatus(drained ? HealthStatus.DRAINING : HealthStatus.HEALTHY)
            .setLoadBalancingWeight(weight);
    if (!instance.metadata().isEmpty()) {
      endpoint.setMetadata(metadataOf(instance.metadata()));
    }
    return LocalityLbEndpoints.newBuilder()
        .setLocality(localityFor(instance))
        .setLoadBalancingWeight(weight)
        .addLbEndpoints(endpoint)
        .build();
  }

  /** {@code region}/{@code zone} from the metadata (empty when absent), the address as sub-zone. */
  static Locality localityFor(ServiceInstance instance) {
    return Locality.newBuilder()
        .setRegion(Localities.region(instance.metadata()))
        .setZone(Localities.zone(instance.metadata()))
        .setSubZone(instance.address())
        .build();
  }

  private static Metadata metadataOf(Map<String, String> metadata) {
    Struct.Builder fields = Struct.newBuilder();
    // ServiceInstance keeps metadata sorted by key, so the bytes are the same on every replica.
    metadata.forEach((k, v) -> fields.putFields(k, Value.newBuilder().setStringValue(v).build()));
    return Metadata.newBuilder().putFilterMetadata(METADATA_NAMESPACE, fields.build()).build();
  }

  /**
   * A version for a set of resources: 16 hex digits of a SHA-256 over their deterministic
   * serialization, so equal content has an equal version on every replica and every restart.
   */
  static String version(List<? extends com.google.protobuf.Message> resources) {
    Hasher hasher = Hashing.sha256().newHasher();
    for (com.google.protobuf.Message m : resources) {
      requireNonNull(m, "resource");
      byte[] bytes = deterministicBytes(m);
      hasher.putInt(bytes.length).putBytes(bytes);
    }
    return hasher.hash().toString().substring(0, 16);
  }

  static byte[] deterministicBytes(com.google.protobuf.Message m) {
    try {
      byte[] out = new byte[m.getSerializedSize()];
      com.google.protobuf.CodedOutputStream cos = com.google.protobuf.CodedOutputStream.newInstance(out);
      cos.useDeterministicSerialization();
      m.writeTo(cos);
      cos.checkNoSpaceLeft();
      return out;
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException("serializing to a byte array", e);
    }
  }
}
