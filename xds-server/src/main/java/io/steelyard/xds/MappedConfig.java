package io.steelyard.xds;

import static java.util.Objects.requireNonNull;

import com.google.protobuf.Duration;
import io.envoyproxy.envoy.config.cluster.v3.LoadBalancingPolicy;
import io.envoyproxy.envoy.config.cluster.v3.OutlierDetection;
import io.envoyproxy.envoy.config.route.v3.RetryPolicy;
import io.steelyard.balancer.spi.EndpointSelection;
import java.util.List;
import javax.annotation.Nullable;

/**
 * What the control plane serves of one service's stored config ({@link ConfigMapping}), as the
 * xDS pieces it goes into, and what it leaves out. Immutable; equal configs map to equal values,
 * so an unchanged mapping pushes nothing.
 *
 * @param policy {@code zoneRouting} and {@code slowStart}: the locality weights per zone
 * @param outlierDetection the Cluster's {@code outlier_detection} (gRFC A50), or null
 * @param loadBalancingPolicy the Cluster's {@code load_balancing_policy} (gRFC A48, A52), or null
 *     for {@code lb_policy: ROUND_ROBIN}
 * @param selection a {@code split} (weighted clusters, gRFC A28) or a {@code subset} (the
 *     endpoints of the service's cluster), or null for every instance
 * @param methods route rules, most specific first: exact methods, then services, then the default
 * @param served one line per mapped part, saying what it became
 * @param leftOut one line per part served without, naming it
 */
record MappedConfig(
    StoredPolicy policy,
    @Nullable OutlierDetection outlierDetection,
    @Nullable LoadBalancingPolicy loadBalancingPolicy,
    @Nullable EndpointSelection selection,
    List<MethodRule> methods,
    List<String> served,
    List<String> leftOut) {

  /** No stored config: zone-aware locality weights, round robin, one route without limits. */
  static final MappedConfig NONE =
      new MappedConfig(StoredPolicy.DEFAULT, null, null, null, List.of(), List.of(), List.of());

  MappedConfig {
    requireNonNull(policy, "policy");
    methods = List.copyOf(methods);
    served = List.copyOf(served);
    leftOut = List.copyOf(leftOut);
  }

  /** Whether the route splits the calls over one cluster per split entry. */
  boolean splits() {
    return selection != null && selection.isSplit();
  }

  /**
   * The timeout and retry policy of the calls one route matches.
   *
   * @param path the exact {@code /package.Service/Method} path, the {@code /package.Service/}
   *     prefix ({@code prefix}), or empty for every call
   * @param prefix whether {@code path} is a prefix
   * @param timeout the route's {@code max_stream_duration} (gRFC A31), or null
   * @param retry the route's {@code retry_policy} (gRFC A44), or null
   */
  record MethodRule(String path, boolean prefix, @Nullable Duration timeout, @Nullable RetryPolicy retry) {
    MethodRule {
      requireNonNull(path, "path");
    }
  }
}
