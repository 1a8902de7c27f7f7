package io.steelyard.xds;

import com.google.protobuf.Any;
import com.google.protobuf.ListValue;
import com.google.protobuf.Struct;
import com.google.protobuf.UInt32Value;
import com.google.protobuf.Value;
import com.google.protobuf.util.Durations;
import com.github.xds.type.v3.TypedStruct;
import io.envoyproxy.envoy.config.cluster.v3.LoadBalancingPolicy;
import io.envoyproxy.envoy.config.cluster.v3.OutlierDetection;
import io.envoyproxy.envoy.config.core.v3.TypedExtensionConfig;
import io.envoyproxy.envoy.extensions.load_balancing_policies.least_request.v3.LeastRequest;
import io.envoyproxy.envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin;
import io.envoyproxy.envoy.extensions.load_balancing_policies.wrr_locality.v3.WrrLocality;
import io.grpc.LoadBalancerProvider;
import io.grpc.LoadBalancerRegistry;
import io.grpc.NameResolver.ConfigOrError;
import io.grpc.util.OutlierDetectionLoadBalancer.OutlierDetectionLoadBalancerConfig;
import io.steelyard.balancer.WeightedLeastRequestLoadBalancerProvider;
import io.steelyard.balancer.WeightedPolicyProvider;
import io.steelyard.balancer.spi.EndpointSelection;
import io.steelyard.balancer.spi.SlowStartConfig;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import io.steelyard.balancer.spi.ZoneRoutingConfig;
import io.steelyard.discovery.ChannelConfigCheck;
import io.steelyard.registry.ServiceConfigJson;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.annotation.Nullable;

/**
 * How a service's stored config becomes xDS: read with the key and the parser the {@code etcd}
 * resolver uses, translated into what every gRPC xDS client implements, and what has no xDS form
 * named.
 *
 * <p><b>One verdict.</b> A config is refused exactly when a Java channel refuses it: {@link
 * ChannelConfigCheck} runs grpc's own service-config parser, which runs the policies' parsers
 * (steelyard's for its policies, grpc's {@code outlier_detection_experimental}). The values
 * mapped are then read from those same parsers' results ({@link WeightedPolicyConfig}, {@link
 * OutlierDetectionLoadBalancerConfig}); only {@code methodConfig}, whose parsed form grpc keeps
 * internal, is read from the JSON grpc has just accepted ({@link MethodRoutes}).
 *
 * <p><b>What maps to what.</b>
 *
 * <ul>
 *   <li>The policy is the first {@code loadBalancingConfig} entry grpc knows, as a channel picks
 *       it. Under {@code outlier_detection_experimental} its settings become the Cluster's
 *       {@code outlier_detection} (gRFC A50) and the policy is its first known {@code
 *       childPolicy}.
 *   <li>A steelyard weighted policy: the registered weights as locality weights (as without a
 *       config), with its {@code zoneRouting} and {@code slowStart}; {@code split} becomes
 *       weighted clusters (gRFC A28) and {@code subset} the endpoints of the service's cluster
 *       ({@link XdsRoutes}). {@code weighted_least_request} adds a {@code load_balancing_policy}
 *       ({@link #leastRequest}). Its other options have no xDS form.
 *   <li>{@code methodConfig} {@code timeout} and {@code retryPolicy}: per route ({@link
 *       MethodRoutes}).
 *   <li>Anything else is left out and named: {@code retryThrottling}, {@code healthCheckConfig},
 *       another library's policy, a policy option without an xDS form.
 * </ul>
 *
 * <p>Pure and thread-safe: the same JSON gives the same {@link MappedConfig}.
 */
final class ConfigMapping {

  static final String OUTLIER_DETECTION = "outlier_detection_experimental";
  /** The options of a steelyard policy that travel; the others are named as left out. */
  private static final Set<String> MAPPED_OPTIONS =
      Set.of(SlowStartConfig.FIELD, ZoneRoutingConfig.FIELD, EndpointSelection.FIELD_SPLIT, EndpointSelection.FIELD_SUBSET);
  /**
   * The policy name grpc-js registers for its locality-weighted parent. {@code @grpc/grpc-js-xds}
   * 1.14 registers its {@code WrrLocality} converter under the type URL without the {@code
   * type.googleapis.com/} prefix (lb-policy-registry/wrr-locality.js), so it never matches and
   * would fall through to a bare {@code round_robin} that ignores locality weights; a {@code
   * TypedStruct} naming this policy (gRFC A52's custom-policy form) reaches it directly.
   */
  static final String GRPC_JS_WRR_LOCALITY = "xds_wrr_locality";

  private final ChannelConfigCheck check;

  ConfigMapping(ChannelConfigCheck check) {
    this.check = check;
  }

  /**
   * The mapping of {@code json}, the stored config; {@link MappedConfig#NONE} for null (none).
   *
   * @throws IllegalArgumentException with the parser's reason in one line, when a Java channel
   *     would refuse the config
   */
  MappedConfig map(@Nullable String json) {
    if (json == null) {
      return MappedConfig.NONE;
    }
    Map<String, ?> config = ServiceConfigJson.parse(json);
    check.check(config);
    Mapping out = new Mapping();
    for (Map.Entry<String, ?> field : config.entrySet()) {
      switch (field.getKey()) {
        case "loadBalancingConfig" -> policies((List<?>) field.getValue(), "loadBalancingConfig", out);
        case "methodConfig" -> MethodRoutes.map((List<?>) field.getValue(), out.methods, out.served, out.leftOut);
        default -> out.leftOut.add(field.getKey());
      }
    }
    return new MappedConfig(out.policy, out.outlierDetection, out.loadBalancingPolicy, out.selection,
        MethodRoutes.ordered(out.methods), out.served, out.leftOut);
  }

  /** What a walk of the config found so far. */
  private static final class Mapping {
    StoredPolicy policy = StoredPolicy.DEFAULT;
    @Nullable OutlierDetection outlierDetection;
    @Nullable LoadBalancingPolicy loadBalancingPolicy;
    @Nullable EndpointSelection selection;
    final List<MappedConfig.MethodRule> methods = new ArrayList<>();
    final List<String> served = new ArrayList<>();
    final List<String> leftOut = new ArrayList<>();
  }

  /** The first entry of {@code list} that grpc knows, as a channel picks it (grpc checked the rest). */
  @SuppressWarnings("unchecked")
  private static void policies(List<?> list, String where, Mapping out) {
    LoadBalancerRegistry registry = LoadBalancerRegistry.getDefaultRegistry();
    for (Object entry : list) {
      Map.Entry<String, ?> policy = ((Map<String, ?>) entry).entrySet().iterator().next();
      String name = policy.getKey();
      LoadBalancerProvider provider = registry.getProvider(name);
      if (provider == null) {
        continue;
      }
      Map<String, ?> options = policy.getValue() == null ? Map.of() : (Map<String, ?>) policy.getValue();
      ConfigOrError parsed = provider.parseLoadBalancingPolicyConfig(options);
      if (parsed.getError() != null) { // grpc accepted the whole config: not expected
        throw new IllegalArgumentException(ServiceConfigJson.refusal(parsed.getError()));
      }
      if (name.equals(OUTLIER_DETECTION)) {
        OutlierDetectionLoadBalancerConfig od = (OutlierDetectionLoadBalancerConfig) parsed.getConfig();
        out.outlierDetection = outlierDetection(od);
        out.served.add(name + ": Cluster outlier_detection " + describe(out.outlierDetection));
        for (String option : options.keySet()) {
          if (!option.equals("childPolicy") && !OUTLIER_FIELDS.contains(option)) {
            out.leftOut.add(name + "." + option);
          }
        }
        policies((List<?>) options.get("childPolicy"), name + ".childPolicy", out);
      } else if (provider instanceof WeightedPolicyProvider) {
        weighted(name, options, (WeightedPolicyConfig) parsed.getConfig(), out);
      } else {
        out.leftOut.add(where + " " + name + " (xDS clients balance by the registered weights instead)");
      }
      return;
    }
  }

  private static final Set<String> OUTLIER_FIELDS = Set.of("interval", "baseEjectionTime", "maxEjectionTime",
      "maxEjectionPercentage", "successRateEjection", "failurePercentageEjection");

  private static void weighted(String name, Map<String, ?> options, WeightedPolicyConfig config, Mapping out) {
    out.policy = new StoredPolicy(config.zoneRouting(), config.slowStart());
    out.selection = config.endpointSelection();
    out.served.add(name + ": the registered weights as locality weights, one locality per instance");
    if (options.containsKey(ZoneRoutingConfig.FIELD)) {
      out.served.add(name + ".zoneRouting: " + config.zoneRouting() + ", in the locality weights per caller zone");
    }
    if (config.slowStart() != null) {
      out.served.add(name + ".slowStart: " + config.slowStart() + ", in ramped locality weights");
    }
    if (out.selection != null) {
      out.served.add(name + "." + (out.selection.isSplit()
          ? "split: route weighted_clusters, one cluster per entry: " + out.selection
          : "subset: the endpoints of the service's cluster: " + out.selection));
    }
    boolean leastRequest = name.equals(WeightedLeastRequestLoadBalancerProvider.POLICY_NAME);
    if (leastRequest) {
      out.loadBalancingPolicy = leastRequest(config.choiceCount());
      out.served.add(name + ": Cluster load_balancing_policy [WrrLocality[LeastRequest(choice_count "
          + config.choiceCount() + "), RoundRobin], " + GRPC_JS_WRR_LOCALITY + "[round_robin]]");
    }
    for (String option : options.keySet()) {
      if (!MAPPED_OPTIONS.contains(option)
          && !(leastRequest && option.equals(WeightedPolicyConfig.FIELD_CHOICE_COUNT))) {
        out.leftOut.add(name + "." + option);
      }
    }
  }

  /**
   * gRFC A50's fields from grpc's parsed config. Each detector's enforcement is always set: in
   * xDS success-rate ejection is on unless {@code enforcing_success_rate} is 0, and
   * failure-percentage ejection off unless {@code enforcing_failure_percentage} is above 0,
   * while in a service config each is on exactly when present.
   */
  static OutlierDetection outlierDetection(OutlierDetectionLoadBalancerConfig c) {
    OutlierDetection.Builder od = OutlierDetection.newBuilder()
        .setInterval(Durations.fromNanos(c.intervalNanos))
        .setBaseEjectionTime(Durations.fromNanos(c.baseEjectionTimeNanos))
        .setMaxEjectionTime(Durations.fromNanos(c.maxEjectionTimeNanos))
        .setMaxEjectionPercent(UInt32Value.of(c.maxEjectionPercent));
    if (c.successRateEjection != null) {
      od.setSuccessRateStdevFactor(UInt32Value.of(c.successRateEjection.stdevFactor))
          .setEnforcingSuccessRate(UInt32Value.of(c.successRateEjection.enforcementPercentage))
          .setSuccessRateMinimumHosts(UInt32Value.of(c.successRateEjection.minimumHosts))
          .setSuccessRateRequestVolume(UInt32Value.of(c.successRateEjection.requestVolume));
    } else {
      od.setEnforcingSuccessRate(UInt32Value.of(0));
    }
    if (c.failurePercentageEjection != null) {
      od.setFailurePercentageThreshold(UInt32Value.of(c.failurePercentageEjection.threshold))
          .setEnforcingFailurePercentage(UInt32Value.of(c.failurePercentageEjection.enforcementPercentage))
          .setFailurePercentageMinimumHosts(UInt32Value.of(c.failurePercentageEjection.minimumHosts))
          .setFailurePercentageRequestVolume(UInt32Value.of(c.failurePercentageEjection.requestVolume));
    } else {
      od.setEnforcingFailurePercentage(UInt32Value.of(0));
    }
    return od.build();
  }

  private static String describe(OutlierDetection od) {
    StringBuilder sb = new StringBuilder("(interval ").append(Durations.toString(od.getInterval()))
        .append(", base ejection ").append(Durations.toString(od.getBaseEjectionTime()))
        .append(", at most ").append(od.getMaxEjectionPercent().getValue()).append("% ejected");
    if (od.getEnforcingSuccessRate().getValue() > 0) {
      sb.append(", success rate stdev factor ").append(od.getSuccessRateStdevFactor().getValue());
    }
    if (od.getEnforcingFailurePercentage().getValue() > 0) {
      sb.append(", failure percentage threshold ").append(od.getFailurePercentageThreshold().getValue());
    }
    return sb.append(')').toString();
  }

  /**
   * {@code weighted_least_request} as a Cluster's {@code load_balancing_policy} (gRFC A52), each
   * client taking the first entry it knows, so that every one keeps the locality weights:
   *
   * <ol>
   *   <li>{@code WrrLocality} over {@code [LeastRequest, RoundRobin]}: grpc-java runs its {@code
   *       least_request_experimental} (gRFC A48) inside each locality, C-core (which has no least
   *       request) {@code round_robin};
   *   <li>a {@code TypedStruct} naming grpc-js's {@code xds_wrr_locality} over {@code
   *       round_robin}: see {@link #GRPC_JS_WRR_LOCALITY}.
   * </ol>
   *
   * <p>A bare {@code [LeastRequest, RoundRobin]} would give every client one policy over every
   * endpoint, without the locality weights that carry the registered weights, the zone shares
   * and slow start. With one instance per locality each locality's child has one endpoint to
   * pick, so no client compares loads: the load-aware pick stays with Java's {@code etcd:///}
   * channels (docs/xds.md).
   */
  static LoadBalancingPolicy leastRequest(int choiceCount) {
    LoadBalancingPolicy endpointPicking = LoadBalancingPolicy.newBuilder()
        .addPolicies(policy("envoy.load_balancing_policies.least_request",
            Any.pack(LeastRequest.newBuilder().setChoiceCount(UInt32Value.of(choiceCount)).build())))
        .addPolicies(policy("envoy.load_balancing_policies.round_robin", Any.pack(RoundRobin.getDefaultInstance())))
        .build();
    Value emptyObject = Value.newBuilder().setStructValue(Struct.getDefaultInstance()).build();
    Value roundRobinEntry =
        Value.newBuilder().setStructValue(Struct.newBuilder().putFields("round_robin", emptyObject)).build();
    Struct roundRobin = Struct.newBuilder()
        .putFields("child_policy", Value.newBuilder()
            .setListValue(ListValue.newBuilder().addValues(roundRobinEntry)).build())
        .build();
    return LoadBalancingPolicy.newBuilder()
        .addPolicies(policy("envoy.load_balancing_policies.wrr_locality",
            Any.pack(WrrLocality.newBuilder().setEndpointPickingPolicy(endpointPicking).build())))
        .addPolicies(policy(GRPC_JS_WRR_LOCALITY, Any.pack(TypedStruct.newBuilder()
            .setTypeUrl("type.googleapis.com/" + GRPC_JS_WRR_LOCALITY).setValue(roundRobin).build())))
        .build();
  }

  private static LoadBalancingPolicy.Policy policy(String name, Any config) {
    return LoadBalancingPolicy.Policy.newBuilder()
        .setTypedExtensionConfig(TypedExtensionConfig.newBuilder().setName(name).setTypedConfig(config))
        .build();
  }
}
