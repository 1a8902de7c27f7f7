package io.steelyard.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.steelyard.discovery.EtcdNameResolverProvider;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ValueFormat;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** steelyard.* properties become steelyard's objects, or an error naming the property. */
class SteelyardSettingsTest {

  private final SteelyardProperties properties = new SteelyardProperties();
  private final EtcdConnection etcd = EtcdConnection.of("http://127.0.0.1:2379");

  @Test
  void defaultsAreTheLibrarysDefaults() {
    assertThat(SteelyardSettings.connection(properties.getEtcd()))
        .isEqualTo(EtcdConnection.of(EtcdConnection.DEFAULT_ENDPOINTS));
    assertThat(SteelyardSettings.layout(properties.getEtcd())).isEqualTo(KeyLayout.defaults());
    SteelyardSettings.RegistrationSettings r =
        SteelyardSettings.registration(properties.getRegistration(), "greeter", etcd);
    assertThat(r.service()).isEqualTo("greeter");
    assertThat(r.weight()).isEqualTo(1);
    assertThat(r.ttl()).isEqualTo(Duration.ofSeconds(10));
    assertThat(r.format()).isEqualTo(ValueFormat.PIPE);
    assertThat(r.drainDelay()).isEqualTo(Duration.ofSeconds(1));
    assertThat(r.address()).isNull();
  }

  @Test
  void credentialsAndTlsMapOntoTheConnection(@TempDir Path dir) throws IOException {
    Path ca = Files.writeString(dir.resolve("ca.pem"), "x");
    Path cert = Files.writeString(dir.resolve("c.pem"), "x");
    Path key = Files.writeString(dir.resolve("k.pem"), "x");
    SteelyardProperties.Etcd e = properties.getEtcd();
    e.setEndpoints("https://10.0.0.1:2379,10.0.0.2:2379");
    e.setUser("svc");
    e.setPassword("secret");
    e.setCaCert(ca.toString());
    e.setCert(cert.toString());
    e.setKey(key.toString());
    e.setConnectTimeout(Duration.ofSeconds(2));
    EtcdConnection c = SteelyardSettings.connection(e);
    assertThat(c).isEqualTo(EtcdConnection.builder()
        .endpoints("https://10.0.0.1:2379,http://10.0.0.2:2379")
        .user("svc", "secret")
        .tls(ca, cert, key)
        .connectTimeout(Duration.ofSeconds(2))
        .build());
    assertThat(c.toString()).doesNotContain("secret");
  }

  @Test
  void aMalformedEndpointNamesTheProperty() {
    properties.getEtcd().setEndpoints("http://127.0.0.1:2379,ftp://etcd:21");
    assertThatThrownBy(() -> SteelyardSettings.connection(properties.getEtcd()))
        .isInstanceOf(InvalidSteelyardPropertyException.class)
        .hasMessage("steelyard.etcd.endpoints: endpoints: 'ftp://etcd:21' (expected: http(s)://host:port)");
  }

  @Test
  void aPasswordWithoutAUserIsRefusedWithoutEchoingIt() {
    properties.getEtcd().setPassword("hunter2");
    assertThatThrownBy(() -> SteelyardSettings.connection(properties.getEtcd()))
        .isInstanceOf(InvalidSteelyardPropertyException.class)
        .hasMessageStartingWith("steelyard.etcd.user: missing")
        .hasMessageNotContaining("hunter2");
  }

  @Test
  void aClientCertificateWithoutACaIsRefused() {
    properties.getEtcd().setCert("/etc/c.pem");
    assertThatThrownBy(() -> SteelyardSettings.connection(properties.getEtcd()))
        .isInstanceOf(InvalidSteelyardPropertyException.class)
        .hasMessageStartingWith("steelyard.etcd.cert: set without steelyard.etcd.ca-cert");
  }

  @Test
  void anUnreadableCaNamesTheFile() {
    properties.getEtcd().setCaCert("/nonexistent/ca.pem");
    assertThatThrownBy(() -> SteelyardSettings.connection(properties.getEtcd()))
        .isInstanceOf(InvalidSteelyardPropertyException.class)
        .hasMessageContaining("steelyard.etcd.ca-cert")
        .hasMessageContaining("/nonexistent/ca.pem");
  }

  @Test
  void aBadPrefixNamesTheProperty() {
    properties.getEtcd().setPrefix("/services/../other");
    assertThatThrownBy(() -> SteelyardSettings.layout(properties.getEtcd()))
        .hasMessageStartingWith("steelyard.etcd.prefix: prefix: '/services/../other'");
  }

  @Test
  void aWeightOutOfRangeNamesTheProperty() {
    properties.getRegistration().setWeight(-1);
    assertThatThrownBy(() -> SteelyardSettings.registration(properties.getRegistration(), "greeter", etcd))
        .isInstanceOf(InvalidSteelyardPropertyException.class)
        .hasMessage("steelyard.registration.weight: weight: -1 (expected: 0..1000000)");
  }

  @Test
  void aServiceNameTheRegistryRefusesNamesWhereItCameFrom() {
    properties.getRegistration().setService("../payments");
    assertThatThrownBy(() -> SteelyardSettings.registration(properties.getRegistration(), "greeter", etcd))
        .isInstanceOf(InvalidSteelyardPropertyException.class)
        .hasMessageStartingWith("steelyard.registration.service: service: '../payments' (expected:");
    SteelyardProperties fromAppName = new SteelyardProperties();
    assertThatThrownBy(() -> SteelyardSettings.registration(fromAppName.getRegistration(), "my app", etcd))
        .hasMessageStartingWith("spring.application.name: service: 'my app'");
    assertThatThrownBy(() -> SteelyardSettings.registration(fromAppName.getRegistration(), null, etcd))
        .hasMessageStartingWith("steelyard.registration.service: not set, and spring.application.name neither");
  }

  @Test
  void zoneAndRegionBecomeMetadataInTheJsonFormat() {
    SteelyardProperties.Registration r = properties.getRegistration();
    r.setZone("eu-west-1a");
    r.setRegion("eu-west-1");

    SteelyardSettings.RegistrationSettings settings = SteelyardSettings.registration(r, "greeter", etcd);

    assertThat(settings.metadata()).containsOnly(
        Map.entry("zone", "eu-west-1a"), Map.entry("region", "eu-west-1"));
    assertThat(settings.format()).isEqualTo(ValueFormat.JSON);
  }

  @Test
  void aBadZoneOrOneThatContradictsTheMetadataNamesTheProperty() {
    SteelyardProperties.Registration r = properties.getRegistration();
    r.setZone("eu 1");
    assertThatThrownBy(() -> SteelyardSettings.registration(r, "greeter", etcd))
        .isInstanceOf(InvalidSteelyardPropertyException.class)
        .hasMessageStartingWith("steelyard.registration.zone: zone: 'eu 1' (expected:");
    r.setZone("a");
    r.getMetadata().put("zone", "b");
    assertThatThrownBy(() -> SteelyardSettings.registration(r, "greeter", etcd))
        .hasMessage("steelyard.registration.zone: zone: 'a' but the metadata's zone is 'b' (expected: one of them)");
  }

  @Test
  void aBadCallerZoneNamesTheDiscoveryProperty() {
    properties.getDiscovery().setZone("eu 1");
    assertThatThrownBy(() -> SteelyardSettings.resolverProvider(etcd, KeyLayout.defaults(), properties.getDiscovery(), System::getenv))
        .isInstanceOf(InvalidSteelyardPropertyException.class)
        .hasMessageStartingWith("steelyard.discovery.zone: zone: 'eu 1'");
  }

  @Test
  void aShortTtlAMetadataWeightAndAPlainFormatWithMetadataAreRefused() {
    SteelyardProperties.Registration r = properties.getRegistration();
    r.setTtl(Duration.ofSeconds(1));
    assertThatThrownBy(() -> SteelyardSettings.registration(r, "greeter", etcd))
        .hasMessage("steelyard.registration.ttl: ttl: PT1S (expected: >= 2s)");
    r.setTtl(Duration.ofSeconds(10));
    r.getMetadata().put("weight", "3");
    assertThatThrownBy(() -> SteelyardSettings.registration(r, "greeter", etcd))
        .hasMessageStartingWith("steelyard.registration.metadata: metadata: contains 'weight'");
    r.getMetadata().clear();
    r.getMetadata().put("zone", "eu-1");
    r.setFormat(ValueFormat.PLAIN);
    assertThatThrownBy(() -> SteelyardSettings.registration(r, "greeter", etcd))
        .hasMessageStartingWith("steelyard.registration.format: ");
  }

  @Test
  void metadataSwitchesTheFormatToJson() {
    properties.getRegistration().getMetadata().put("zone", "eu-1");
    assertThat(SteelyardSettings.registration(properties.getRegistration(), "greeter", etcd).format())
        .isEqualTo(ValueFormat.JSON);
  }

  @Test
  void aBadAddressOrHostNamesTheProperty() {
    properties.getRegistration().setAddress("10.0.0.7");
    assertThatThrownBy(() -> SteelyardSettings.registration(properties.getRegistration(), "greeter", etcd))
        .hasMessageStartingWith("steelyard.registration.address: address: '10.0.0.7'");
    properties.getRegistration().setAddress(null);
    properties.getRegistration().setHost("bad host");
    assertThatThrownBy(() -> SteelyardSettings.registration(properties.getRegistration(), "greeter", etcd))
        .hasMessageStartingWith("steelyard.registration.host: ");
    properties.getRegistration().setHost(null);
    properties.getRegistration().setHostVariable("POD=IP");
    assertThatThrownBy(() -> SteelyardSettings.registration(properties.getRegistration(), "greeter", etcd))
        .hasMessageStartingWith("steelyard.registration.host-variable: hostVariable: 'POD=IP'");
  }

  @Test
  void discoveryTimingsAreChecked() {
    properties.getDiscovery().setDebounce(Duration.ofSeconds(5));
    assertThatThrownBy(() -> SteelyardSettings.resolverProvider(etcd, KeyLayout.defaults(), properties.getDiscovery(), System::getenv))
        .hasMessageStartingWith("steelyard.discovery.debounce: ");
    assertThat(SteelyardSettings.resolverProvider(etcd, KeyLayout.defaults(), new SteelyardProperties().getDiscovery(), System::getenv))
        .isInstanceOf(EtcdNameResolverProvider.class);
  }
}
