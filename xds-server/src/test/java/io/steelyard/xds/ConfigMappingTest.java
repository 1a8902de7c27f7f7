package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.github.xds.type.v3.TypedStruct;
import com.google.protobuf.util.Durations;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.cluster.v3.LoadBalancingPolicy;
import io.envoyproxy.envoy.config.cluster.v3.OutlierDetection;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.route.v3.Route;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.envoyproxy.envoy.config.route.v3.WeightedCluster.ClusterWeight;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager;
import io.envoyproxy.envoy.extensions.load_balancing_policies.least_request.v3.LeastRequest;
import io.envoyproxy.envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin;
import io.envoyproxy.envoy.extensions.load_balancing_policies.wrr_locality.v3.WrrLocality;
import io.steelyard.discovery.ChannelConfigCheck;
import io.steelyard.registry.ServiceInstance;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The stored config as xDS: one test per gRFC field, then what is left out and what is refused. */
class ConfigMappingTest {

  private static final ConfigMapping MAPPING = new ConfigMapping(ChannelConfigCheck.create());
  private static final String GREETER = "/steelyard.examples.Greeter/SayHello";

  private static MappedConfig map(String json) {
    return MAPPING.map(json);
  }

  private static ServiceInstance instance(String address, int weight, String version) {
    return new ServiceInstance("greeter", address, weight, Map.of("version", version));
  }

  private static final List<ServiceInstance> V1_V2 = List.of(
      instance("10.0.0.1:1", 2, "v1"), instance("10.0.0.2:1", 2, "v1"), instance("10.0.0.3:1", 2, "v2"));

  private static ServiceResources resources(MappedConfig config, List<ServiceInstance> instances) {
    return ServiceResources.build("greeter", instances, config, XdsResources::registeredWeights, null);
  }

  private static RouteConfiguration routes(ServiceResources resources) throws Exception {
    return resources.listener().resource().getApiListener().getApiListener()
        .unpack(HttpConnectionManager.class).getRouteConfig();
  }

  private static List<String> addresses(ClusterLoadAssignment cla) {
    return cla.getEndpointsList().stream().map(l -> l.getLocality().getSubZone()).toList();
  }

  @Test
  void noConfigServesTheDefaults() {
    assertThat(map(null)).isEqualTo(MappedConfig.NONE);
    assertThat(map("{}")).isEqualTo(MappedConfig.NONE);
  }

  @Test
  void failurePercentageEjectionBecomesTheClusterOutlierDetectionOfGrfcA50() {
    MappedConfig config = map("{\"loadBalancingConfig\":[{\"outlier_detection_experimental\":{"
        + "\"interval\":\"0.5s\",\"baseEjectionTime\":\"10s\",\"maxEjectionTime\":\"60s\",\"maxEjectionPercentage\":25,"
        + "\"failurePercentageEjection\":{\"threshold\":40,\"enforcementPercentage\":100,\"minimumHosts\":3,"
        + "\"requestVolume\":20},\"childPolicy\":[{\"weighted_random\":{}}]}}]}");

    OutlierDetection od = config.outlierDetection();
    assertThat(Durations.toMillis(od.getInterval())).isEqualTo(500);
    assertThat(Durations.toMillis(od.getBaseEjectionTime())).isEqualTo(10_000);
    assertThat(Durations.toMillis(od.getMaxEjectionTime())).isEqualTo(60_000);
    assertThat(od.getMaxEjectionPercent().getValue()).isEqualTo(25);
    assertThat(od.getFailurePercentageThreshold().getValue()).isEqualTo(40);
    assertThat(od.getEnforcingFailurePercentage().getValue()).isEqualTo(100);
    assertThat(od.getFailurePercentageMinimumHosts().getValue()).isEqualTo(3);
    assertThat(od.getFailurePercentageRequestVolume().getValue()).isEqualTo(20);
    // Not in the service config: in xDS it must be switched off, or it would run with defaults.
    assertThat(od.getEnforcingSuccessRate().getValue()).isZero();
    assertThat(config.leftOut()).isEmpty();
    for (Cluster cluster : resources(config, V1_V2).clusters().values().stream().map(v -> v.resource()).toList()) {
      assertThat(cluster.getOutlierDetection()).isEqualTo(od);
    }
  }

  @Test
  void successRateEjectionKeepsItsStdevFactorAndLeavesFailurePercentageOff() {
    OutlierDetection od = map("{\"loadBalancingConfig\":[{\"outlier_detection_experimental\":{"
        + "\"successRateEjection\":{\"stdevFactor\":1500,\"enforcementPercentage\":80,\"minimumHosts\":4,"
        + "\"requestVolume\":50},\"childPolicy\":[{\"round_robin\":{}}]}}]}").outlierDetection();

    assertThat(od.getSuccessRateStdevFactor().getValue()).isEqualTo(1500);
    assertThat(od.getEnforcingSuccessRate().getValue()).isEqualTo(80);
    assertThat(od.getSuccessRateMinimumHosts().getValue()).isEqualTo(4);
    assertThat(od.getSuccessRateRequestVolume().getValue()).isEqualTo(50);
    assertThat(od.getEnforcingFailurePercentage().getValue()).isZero();
  }

  @Test
  void aSplitBecomesWeightedClustersOfGrfcA28EachWithItsSelectorsInstances() throws Exception {
    MappedConfig config = map("{\"loadBalancingConfig\":[{\"weighted_random\":{\"split\":["
        + "{\"selector\":{\"version\":\"v1\"},\"percent\":90},{\"selector\":{\"version\":\"v2\"},\"percent\":10}]}}]}");
    ServiceResources served = resources(config, V1_V2);

    List<ClusterWeight> weights = routes(served).getVirtualHosts(0).getRoutes(0).getRoute()
        .getWeightedClusters().getClustersList();
    assertThat(weights).extracting(ClusterWeight::getName).containsExactly("greeter/0", "greeter/1");
    assertThat(weights).extracting(w -> w.getWeight().getValue()).containsExactly(9000, 1000);
    assertThat(served.clusters()).containsOnlyKeys("greeter", "greeter/0", "greeter/1");
    assertThat(addresses(served.endpoints().get("greeter/0").resource())).containsExactly("10.0.0.1:1", "10.0.0.2:1");
    assertThat(addresses(served.endpoints().get("greeter/1").resource())).containsExactly("10.0.0.3:1");
    assertThat(addresses(served.assignment().resource())).hasSize(3);
  }

  @Test
  void aSplitEntryWithoutInstancesTakingCallsGivesItsShareToTheOthers() throws Exception {
    MappedConfig config = map("{\"loadBalancingConfig\":[{\"weighted_random\":{\"split\":["
        + "{\"selector\":{\"version\":\"v1\"},\"percent\":90},{\"selector\":{\"version\":\"v2\"},\"percent\":10}]}}]}");
    List<ServiceInstance> v2Drained = List.of(instance("10.0.0.1:1", 2, "v1"), instance("10.0.0.3:1", 0, "v2"));
    List<ServiceInstance> noneMatch = List.of(instance("10.0.0.9:1", 2, "v3"));

    assertThat(routes(resources(config, v2Drained)).getVirtualHosts(0).getRoutes(0).getRoute()
            .getWeightedClusters().getClustersList())
        .extracting(ClusterWeight::getName).containsExactly("greeter/0");
    assertThat(routes(resources(config, noneMatch)).getVirtualHosts(0).getRoutes(0).getRoute().getCluster())
        .isEqualTo("greeter");
  }

  @Test
  void aSubsetSelectorAndItsFallbackChooseTheClustersEndpoints() {
    MappedConfig v2First = map("{\"loadBalancingConfig\":[{\"weighted_random\":{\"subset\":"
        + "{\"selector\":{\"version\":\"v3\"},\"fallback\":{\"selector\":{\"version\":\"v2\"},\"fallback\":\"none\"}}}}]}");
    MappedConfig noneLeft = map("{\"loadBalancingConfig\":[{\"weighted_random\":{\"subset\":"
        + "{\"selector\":{\"version\":\"v9\"},\"fallback\":\"none\"}}}]}");
    MappedConfig anyLeft = map("{\"loadBalancingConfig\":[{\"weighted_random\":{\"subset\":"
        + "{\"selector\":{\"version\":\"v9\"}}}}]}");

    assertThat(addresses(resources(v2First, V1_V2).assignment().resource())).containsExactly("10.0.0.3:1");
    assertThat(addresses(resources(noneLeft, V1_V2).assignment().resource())).isEmpty();
    assertThat(addresses(resources(anyLeft, V1_V2).assignment().resource())).hasSize(3);
    assertThat(resources(v2First, V1_V2).clusters()).containsOnlyKeys("greeter");
  }

  @Test
  void aMethodTimeoutBecomesItsRoutesMaxStreamDurationOfGrfcA31() throws Exception {
    MappedConfig config = map("{\"methodConfig\":[{\"name\":[{}],\"timeout\":\"5s\"},"
        + "{\"name\":[{\"service\":\"steelyard.examples.Greeter\",\"method\":\"SayHello\"}],\"timeout\":\"0.2s\"}]}");
    List<Route> routes = routes(resources(config, V1_V2)).getVirtualHosts(0).getRoutesList();

    assertThat(routes).hasSize(2);
    assertThat(routes.get(0).getMatch().getPath()).isEqualTo(GREETER);
    assertThat(Durations.toMillis(routes.get(0).getRoute().getMaxStreamDuration().getGrpcTimeoutHeaderMax())).isEqualTo(200);
    assertThat(Durations.toMillis(routes.get(0).getRoute().getMaxStreamDuration().getMaxStreamDuration())).isEqualTo(200);
    assertThat(routes.get(1).getMatch().getPrefix()).isEmpty();
    assertThat(Durations.toMillis(routes.get(1).getRoute().getMaxStreamDuration().getGrpcTimeoutHeaderMax())).isEqualTo(5000);
    assertThat(routes.get(0).getRoute().hasTimeout()).isFalse();
  }

  @Test
  void aServiceWideRetryPolicyBecomesARouteRetryPolicyOfGrfcA44() throws Exception {
    MappedConfig config = map("{\"methodConfig\":[{\"name\":[{\"service\":\"steelyard.examples.Greeter\"}],"
        + "\"retryPolicy\":{\"maxAttempts\":4,\"initialBackoff\":\"0.1s\",\"maxBackoff\":\"1s\","
        + "\"backoffMultiplier\":3,\"retryableStatusCodes\":[\"UNAVAILABLE\",\"ABORTED\",4]}}]}");
    List<Route> routes = routes(resources(config, V1_V2)).getVirtualHosts(0).getRoutesList();

    assertThat(routes.get(0).getMatch().getPrefix()).isEqualTo("/steelyard.examples.Greeter/");
    var retry = routes.get(0).getRoute().getRetryPolicy();
    assertThat(retry.getRetryOn()).isEqualTo("unavailable,deadline-exceeded");
    assertThat(retry.getNumRetries().getValue()).isEqualTo(3);
    assertThat(Durations.toMillis(retry.getRetryBackOff().getBaseInterval())).isEqualTo(100);
    assertThat(Durations.toMillis(retry.getRetryBackOff().getMaxInterval())).isEqualTo(1000);
    assertThat(routes.get(1).getRoute().hasRetryPolicy()).isFalse(); // the catch-all route
    assertThat(config.leftOut()).containsExactly(
        "methodConfig[0].retryPolicy.backoffMultiplier 3.0 (xDS clients back off by 2)",
        "methodConfig[0].retryPolicy.retryableStatusCodes ABORTED (xDS clients retry only "
            + "[CANCELLED, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, INTERNAL, UNAVAILABLE])");
  }

  @Test
  void weightedLeastRequestBecomesLeastRequestOfGrfcA48InsideWrrLocality() throws Exception {
    MappedConfig config = map("{\"loadBalancingConfig\":[{\"weighted_least_request\":{\"choiceCount\":4}}]}");
    LoadBalancingPolicy policy = resources(config, V1_V2).cluster().resource().getLoadBalancingPolicy();

    WrrLocality wrr = policy.getPolicies(0).getTypedExtensionConfig().getTypedConfig().unpack(WrrLocality.class);
    List<com.google.protobuf.Any> picking = wrr.getEndpointPickingPolicy().getPoliciesList().stream()
        .map(p -> p.getTypedExtensionConfig().getTypedConfig()).toList();
    assertThat(picking.get(0).unpack(LeastRequest.class).getChoiceCount().getValue()).isEqualTo(4);
    assertThat(picking.get(1).is(RoundRobin.class)).isTrue();
    TypedStruct grpcJs = policy.getPolicies(1).getTypedExtensionConfig().getTypedConfig().unpack(TypedStruct.class);
    assertThat(grpcJs.getTypeUrl()).isEqualTo("type.googleapis.com/xds_wrr_locality");
    assertThat(grpcJs.getValue().getFieldsOrThrow("child_policy").getListValue().getValues(0)
        .getStructValue().containsFields("round_robin")).isTrue();
    assertThat(config.leftOut()).isEmpty();
  }

  @Test
  void zoneRoutingAndSlowStartStillComeFromTheBalancersParser() {
    MappedConfig config = map("{\"loadBalancingConfig\":[{\"weighted_random\":{\"slowStart\":{\"window\":\"10s\"},"
        + "\"zoneRouting\":{\"enabled\":false}}}]}");

    assertThat(config.policy().zoneRouting().enabled()).isFalse();
    assertThat(config.policy().slowStart().windowNanos()).isEqualTo(10_000_000_000L);
    assertThat(config.loadBalancingPolicy()).isNull();
  }

  @Test
  void theFirstPolicyGrpcKnowsIsTheOneRead() {
    MappedConfig config = map("{\"loadBalancingConfig\":[{\"unknown_policy\":{}},{\"weighted_random\":"
        + "{\"slowStart\":{\"window\":\"10s\"}}},{\"weighted_least_request\":{}}]}");

    assertThat(config.policy().slowStart()).isNotNull();
    assertThat(config.loadBalancingPolicy()).isNull();
    assertThat(config.leftOut()).isEmpty();
  }

  @Test
  void partsWithoutAnXdsFormAreNamedAndTheRestIsServed() {
    MappedConfig config = map("{\"loadBalancingConfig\":[{\"weighted_random\":{\"panicThresholdPercent\":50,"
        + "\"subsetSize\":10}}],\"retryThrottling\":{\"maxTokens\":10,\"tokenRatio\":0.5},"
        + "\"methodConfig\":[{\"name\":[{}],\"timeout\":\"1s\",\"waitForReady\":true}]}");

    assertThat(config.leftOut()).containsExactly("weighted_random.panicThresholdPercent",
        "weighted_random.subsetSize", "retryThrottling", "methodConfig[0].waitForReady");
    assertThat(config.methods()).hasSize(1);
    assertThat(config.served()).anyMatch(s -> s.startsWith("methodConfig[0] every call: route max_stream_duration 1s"));
  }

  @Test
  void grpcsOwnPolicyIsNamedAsLeftOut() {
    assertThat(map("{\"loadBalancingConfig\":[{\"no_such_policy\":{}},{\"round_robin\":{}}]}").leftOut())
        .containsExactly("loadBalancingConfig round_robin (xDS clients balance by the registered weights instead)");
  }

  @Test
  void aConfigAJavaChannelRefusesIsRefusedWithTheParsersReason() {
    assertThatThrownBy(() -> map("{\"loadBalancingConfig\":[{\"weighted_random\":{\"split\":["
            + "{\"selector\":{\"version\":\"v1\"},\"percent\":90},{\"selector\":{\"version\":\"v2\"},\"percent\":5}]}}]}"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("percents sum to 95");
    assertThatThrownBy(() -> map("{\"methodConfig\":[{\"name\":[{}],\"timeout\":\"soon\"}]}"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("service config refused");
    assertThatThrownBy(() -> map("{\"loadBalancingConfig\":[{\"weighted_least_request\":"
            + "{\"slowStart\":{\"window\":\"-1s\"}}}]}"))
        .hasMessageContaining("window");
    assertThatThrownBy(() -> map("{\"loadBalancingConfig\":[{\"weighted_random\":"
            + "{\"zoneRouting\":{\"minLocalEndpoints\":0}}}]}"))
        .hasMessageContaining("minLocalEndpoints");
    assertThatThrownBy(() -> map("{not json")).hasMessageStartingWith("service config is not valid JSON");
  }
}
