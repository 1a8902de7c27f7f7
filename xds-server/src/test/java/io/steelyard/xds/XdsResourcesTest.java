package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.HealthStatus;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.endpoint.v3.LbEndpoint;
import io.envoyproxy.envoy.config.endpoint.v3.LocalityLbEndpoints;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager;
import io.envoyproxy.envoy.config.core.v3.Locality;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.registry.ValueCodec;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class XdsResourcesTest {

  private static ServiceInstance instance(String address, int weight, Map<String, String> metadata) {
    return new ServiceInstance("greeter", address, weight, metadata);
  }

  @Test
  void eachInstanceIsALocalityWeightedByItsRegisteredWeight() {
    ClusterLoadAssignment cla =
        XdsResources.loadAssignment(
            "greeter",
            List.of(
                ServiceInstance.of("greeter", "10.0.0.1:50051", 1),
                ServiceInstance.of("greeter", "10.0.0.2:50051", 3)));

    assertThat(cla.getClusterName()).isEqualTo("greeter");
    assertThat(cla.getEndpointsList()).hasSize(2);
    LocalityLbEndpoints second = cla.getEndpoints(1);
    assertThat(second.getLoadBalancingWeight().getValue()).isEqualTo(3);
    assertThat(second.getLbEndpointsList()).hasSize(1);
    LbEndpoint endpoint = second.getLbEndpoints(0);
    assertThat(endpoint.getLoadBalancingWeight().getValue()).isEqualTo(3);
    assertThat(endpoint.getHealthStatus()).isEqualTo(HealthStatus.HEALTHY);
    assertThat(endpoint.getEndpoint().getAddress().getSocketAddress().getAddress()).isEqualTo("10.0.0.2");
    assertThat(endpoint.getEndpoint().getAddress().getSocketAddress().getPortValue()).isEqualTo(50051);
    assertThat(cla.getEndpoints(0).getLoadBalancingWeight().getValue()).isEqualTo(1);
  }

  @Test
  void drainedInstanceStaysAsDrainingWithTheLeastWeightXdsAllows() {
    LocalityLbEndpoints locality =
        XdsResources.localityOf(ServiceInstance.of("greeter", "10.0.0.1:50051", 0));

    assertThat(locality.getLbEndpoints(0).getHealthStatus()).isEqualTo(HealthStatus.DRAINING);
    assertThat(locality.getLoadBalancingWeight().getValue()).isEqualTo(1);
    assertThat(locality.getLbEndpoints(0).getLoadBalancingWeight().getValue()).isEqualTo(1);
  }

  @Test
  void regionAndZoneMetadataNameTheLocalityAndTheAddressIsItsSubZone() {
    LocalityLbEndpoints locality =
        XdsResources.localityOf(
            instance("10.0.0.1:50051", 2, Map.of("zone", "eu-west-1a", "region", "eu-west-1")));

    assertThat(locality.getLocality().getRegion()).isEqualTo("eu-west-1");
    assertThat(locality.getLocality().getZone()).isEqualTo("eu-west-1a");
    assertThat(locality.getLocality().getSubZone()).isEqualTo("10.0.0.1:50051");
  }

  @Test
  void theValueOfASidecarRegisteredWithZoneAndRegionNamesTheLocality() {
    // The bytes `steelyard register ... --zone eu-1a --region eu-1 --meta version=2` writes
    // (RegisterSidecarIT), as the agent's .zone()/.region() and the starter's properties do.
    DecodedValue decoded = ValueCodec.decode((
        "{\"Op\":0,\"Addr\":\"10.0.0.7:50051\",\"Metadata\":"
            + "{\"region\":\"eu-1\",\"version\":\"2\",\"weight\":5,\"zone\":\"eu-1a\"}}")
        .getBytes(java.nio.charset.StandardCharsets.UTF_8));
    ServiceInstance instance = ((DecodedValue.Accepted) decoded).toInstance("greeter");

    Locality locality = XdsResources.localityFor(instance);

    assertThat(locality.getRegion()).isEqualTo("eu-1");
    assertThat(locality.getZone()).isEqualTo("eu-1a");
    assertThat(XdsResources.localityOf(instance).getLoadBalancingWeight().getValue()).isEqualTo(5);
  }

  @Test
  void instanceWithoutZoneHasEmptyRegionAndZone() {
    LocalityLbEndpoints locality =
        XdsResources.localityOf(ServiceInstance.of("greeter", "[::1]:50051", 2));

    assertThat(locality.getLocality().getRegion()).isEmpty();
    assertThat(locality.getLocality().getZone()).isEmpty();
    assertThat(locality.getLbEndpoints(0).getEndpoint().getAddress().getSocketAddress().getAddress())
        .isEqualTo("::1");
  }

  @Test
  void metadataTravelsAsEndpointMetadataUnderTheSteelyardNamespace() {
    LbEndpoint endpoint =
        XdsResources.localityOf(instance("10.0.0.1:50051", 2, Map.of("version", "1.4.2", "zone", "a")))
            .getLbEndpoints(0);

    var fields = endpoint.getMetadata().getFilterMetadataOrThrow(XdsResources.METADATA_NAMESPACE).getFieldsMap();
    assertThat(fields).containsOnlyKeys("version", "zone");
    assertThat(fields.get("version").getStringValue()).isEqualTo("1.4.2");
  }

  @Test
  void instanceWithoutMetadataCarriesNone() {
    LbEndpoint endpoint =
        XdsResources.localityOf(ServiceInstance.of("greeter", "10.0.0.1:50051", 2)).getLbEndpoints(0);

    assertThat(endpoint.hasMetadata()).isFalse();
  }

  @Test
  void listenerIsAnApiListenerRoutingEveryCallToTheServicesCluster() throws Exception {
    Listener listener = XdsResources.listener("greeter");

    assertThat(listener.getName()).isEqualTo("greeter");
    HttpConnectionManager hcm =
        listener.getApiListener().getApiListener().unpack(HttpConnectionManager.class);
    assertThat(hcm.getRouteConfig().getVirtualHosts(0).getDomainsList()).containsExactly("*");
    assertThat(hcm.getRouteConfig().getVirtualHosts(0).getRoutes(0).getRoute().getCluster())
        .isEqualTo("greeter");
    assertThat(hcm.getHttpFiltersList()).extracting(f -> f.getName())
        .containsExactly(XdsResources.ROUTER_FILTER);
  }

  @Test
  void clusterTakesItsEndpointsFromEdsOverAds() {
    Cluster cluster = XdsResources.cluster("greeter");

    assertThat(cluster.getType()).isEqualTo(Cluster.DiscoveryType.EDS);
    assertThat(cluster.getEdsClusterConfig().getEdsConfig().hasAds()).isTrue();
    assertThat(cluster.getLbPolicy()).isEqualTo(Cluster.LbPolicy.ROUND_ROBIN);
  }

  @Test
  void clusterAsksEnvoyForHttp2Upstreams() throws Exception {
    Cluster cluster = XdsResources.cluster("greeter");

    var options =
        cluster.getTypedExtensionProtocolOptionsOrThrow(XdsResources.HTTP_PROTOCOL_OPTIONS)
            .unpack(io.envoyproxy.envoy.extensions.upstreams.http.v3.HttpProtocolOptions.class);
    assertThat(options.getExplicitHttpConfig().hasHttp2ProtocolOptions()).isTrue();
  }

  @Test
  void sameInstancesGiveTheSameBytesAndVersionWhateverTheMetadataOrder() {
    Map<String, String> ab = new LinkedHashMap<>();
    ab.put("a", "1");
    ab.put("b", "2");
    Map<String, String> ba = new LinkedHashMap<>();
    ba.put("b", "2");
    ba.put("a", "1");
    ServiceResources one = ServiceResources.of("greeter", List.of(instance("10.0.0.1:1", 3, ab)));
    ServiceResources two = ServiceResources.of("greeter", List.of(instance("10.0.0.1:1", 3, ba)));

    assertThat(XdsResources.deterministicBytes(one.assignment().resource()))
        .isEqualTo(XdsResources.deterministicBytes(two.assignment().resource()));
    assertThat(one.assignment().version()).isEqualTo(two.assignment().version());
    assertThat(one.listener().version()).isEqualTo(two.listener().version());
    assertThat(one.cluster().version()).isEqualTo(two.cluster().version());
  }

  @Test
  void aWeightChangeChangesOnlyTheAssignmentsVersion() {
    ServiceResources before = ServiceResources.of("greeter", List.of(ServiceInstance.of("greeter", "10.0.0.1:1", 1)));
    ServiceResources after = rebuilt(before, List.of(ServiceInstance.of("greeter", "10.0.0.1:1", 2)));

    assertThat(after.assignment().version()).isNotEqualTo(before.assignment().version());
    assertThat(after.listener()).isSameAs(before.listener());
    assertThat(after.cluster()).isSameAs(before.cluster());
  }

  @Test
  void sameInstancesAgainKeepTheResourcesAsTheyAre() {
    List<ServiceInstance> instances = List.of(ServiceInstance.of("greeter", "10.0.0.1:1", 1));
    ServiceResources before = ServiceResources.of("greeter", instances);

    assertThat(rebuilt(before, List.copyOf(instances))).isSameAs(before);
  }

  private static ServiceResources rebuilt(ServiceResources before, List<ServiceInstance> instances) {
    return ServiceResources.build("greeter", instances, MappedConfig.NONE, XdsResources::registeredWeights, before);
  }
}
