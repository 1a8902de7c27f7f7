package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.ValueFormat;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Bad input fails at build time, naming the value; nothing here talks to etcd. */
class ServiceRegistrationBuilderTest {

  // Connecting is lazy: building (and closing) a registration never dials this.
  private static final EtcdConnection ETCD = EtcdConnection.of("http://127.0.0.1:1");

  private static ServiceRegistrationBuilder builder() {
    return ServiceRegistration.builder(ETCD, "greeter", "10.0.0.7:50051");
  }

  @Test
  void invalidServiceNameIsRefusedNamingIt() {
    assertThatThrownBy(() -> ServiceRegistration.builder(ETCD, "../etc", "10.0.0.7:50051"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'../etc'");
  }

  @Test
  void invalidAddressIsRefusedNamingIt() {
    assertThatThrownBy(() -> ServiceRegistration.builder(ETCD, "greeter", "10.0.0.7"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'10.0.0.7'");
    assertThatThrownBy(() -> ServiceRegistration.builder(ETCD, "greeter", "host:70000"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'host:70000'");
  }

  @Test
  void invalidWeightIsRefusedNamingIt() {
    assertThatThrownBy(() -> builder().weight(-1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("weight: -1");
    assertThatThrownBy(() -> builder().weight(1_000_001))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("weight: 1000001");
  }

  @Test
  void ttlBelowTwoSecondsIsRefusedNamingIt() {
    assertThatThrownBy(() -> builder().ttl(Duration.ofMillis(1500)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ttl: PT1.5S")
        .hasMessageContaining(">= 2s");
    assertThatThrownBy(() -> builder().ttlSeconds(1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ttl: 1s");
    assertThatThrownBy(() -> builder().ttl(Duration.ofSeconds(-3)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ttl: PT-3S");
  }

  @Test
  void fractionalTtlIsRoundedUpToWholeSeconds() {
    try (ServiceRegistration reg = builder().ttl(Duration.ofMillis(2500)).build()) {
      assertThat(reg.ttlSeconds()).isEqualTo(3);
    }
  }

  @Test
  void defaultsAreTenSecondsWeightOneAndTheDefaultKey() {
    try (ServiceRegistration reg = builder().build()) {
      assertThat(reg.ttlSeconds()).isEqualTo(10);
      assertThat(reg.weight()).isEqualTo(1);
      assertThat(reg.key()).isEqualTo("/services/greeter/10.0.0.7:50051");
      assertThat(reg.state()).isEqualTo(RegistrationState.NEW);
      assertThat(reg.leaseId()).isZero();
    }
  }

  @Test
  void metadataWithPipeFormatIsRefused() {
    assertThatThrownBy(
            () -> builder().format(ValueFormat.PIPE).metadata(Map.of("zone", "a")).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("format: PIPE");
  }

  @Test
  void zoneAndRegionAreWrittenAsMetadataInTheJsonFormat() {
    ServiceRegistrationBuilder b =
        builder().zone("eu-west-1a").region("eu-west-1").metadata(Map.of("version", "v2"));
    b.build().close();

    assertThat(b.metadata)
        .containsExactlyInAnyOrderEntriesOf(
            Map.of("zone", "eu-west-1a", "region", "eu-west-1", "version", "v2"));
    assertThat(b.effectiveFormat()).isEqualTo(ValueFormat.JSON);
  }

  @Test
  void zoneIsSetOnceAndCheckedWhenSet() {
    assertThatThrownBy(() -> builder().zone("a").zone("b"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("zone already set");
    assertThatThrownBy(() -> builder().region("eu west"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("region: 'eu west'");
  }

  @Test
  void aZoneGivenAlsoInMetadataWithAnotherValueIsRefused() {
    assertThatThrownBy(() -> builder().zone("a").metadata(Map.of("zone", "b")).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("zone: 'a' but the metadata's zone is 'b' (expected: one of them)");
  }

  @Test
  void metadataMayNotCarryTheWeight() {
    assertThatThrownBy(() -> builder().metadata(Map.of("weight", "5")).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("metadata");
  }

  @Test
  void plainFormatWithAWeightIsRefused() {
    assertThatThrownBy(() -> builder().format(ValueFormat.PLAIN).weight(5).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("format: PLAIN");
  }

  @Test
  void aWeightSourceNeedsAFormatThatCarriesTheWeight() {
    assertThatThrownBy(
            () -> builder().format(ValueFormat.PLAIN).weightSource(WeightSource.fixed(3)).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("format: PLAIN");
  }

  @Test
  void badWeightSourceSettingsAreRefusedNamingThem() {
    assertThatThrownBy(() -> builder().weightHysteresis(1.5, 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("minRelative: 1.5");
    assertThatThrownBy(() -> builder().weightHysteresis(0.1, -1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("minAbsolute: -1");
    assertThatThrownBy(() -> builder().weightSampling(Duration.ZERO, Duration.ofSeconds(30)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("sampleInterval: PT0S");
    assertThatThrownBy(() -> builder().weightSampling(Duration.ofSeconds(5), Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("minWriteInterval: PT-1S");
    assertThatThrownBy(() -> WeightSource.fixed(-1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("-1");
    assertThatThrownBy(() -> WeightSource.availableProcessors(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("perProcessor: 0.0");
  }

  @Test
  void availableProcessorsScalesTheCoreCountWithinTheWeightRange() {
    int cores = Runtime.getRuntime().availableProcessors();
    assertThat(WeightSource.availableProcessors(10).weight()).isEqualTo(cores * 10);
    assertThat(WeightSource.availableProcessors(1e-9).weight()).isEqualTo(1);
    assertThat(WeightSource.availableProcessors(1e12).weight()).isEqualTo(1_000_000);
    assertThat(WeightSource.fixed(7).weight()).isEqualTo(7);
  }

  @Test
  void badTimeoutsAndBackoffAreRefusedNamingThem() {
    assertThatThrownBy(() -> builder().operationTimeout(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("operationTimeout: PT0S");
    assertThatThrownBy(() -> builder().closeTimeout(Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("closeTimeout: PT-1S");
    assertThatThrownBy(() -> builder().retryBackoff(Duration.ofSeconds(2), Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("retryMaxDelay: PT1S");
  }

  @Test
  void aSettingGivenTwiceIsRefused() {
    ServiceRegistrationBuilder b = builder().weight(5).ttl(Duration.ofSeconds(5));

    assertThatThrownBy(() -> b.weight(6))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("weight already set");
    assertThatThrownBy(() -> b.ttlSeconds(7)).hasMessage("ttl already set");
    // Listeners add up: each call is one more listener, not a setting.
    b.listener(state -> {}).listener(state -> {});
  }

  @Test
  void aSharedLeaseSettingGivenTwiceIsRefused() {
    SharedLease.Builder b = SharedLease.builder(ETCD).ttl(Duration.ofSeconds(5));

    assertThatThrownBy(() -> b.ttl(Duration.ofSeconds(6)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("ttl already set");
  }

  @Test
  void closeBeforeStartIsQuickAndIdempotent() {
    ServiceRegistration reg = builder().build();
    reg.close();
    reg.close();
    assertThat(reg.state()).isEqualTo(RegistrationState.CLOSED);
    assertThat(reg.registered()).isCompletedExceptionally();
    assertThatThrownBy(reg::start).isInstanceOf(IllegalStateException.class);
  }

  @Test
  void theAddressIsNamedOnceByAddressPortOrServer() {
    assertThatThrownBy(() -> builder().port(50051))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("address already set (by address(...))");
    assertThatThrownBy(() -> ServiceRegistration.builder(ETCD, "greeter").port(50051).address("10.0.0.7:1"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("address already set (by port(...))");
    assertThatThrownBy(() -> ServiceRegistration.builder(ETCD, "greeter").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("address: none (expected: one of address(...), port(...) or server(...))");
  }

  @Test
  void aPortIsRegisteredWithTheHostFromTheNamedVariable() {
    AdvertisedAddress rule = AdvertisedAddress.of(Map.of("POD_IP", "10.9.8.7")::get, List::of);
    ServiceRegistration reg =
        ServiceRegistration.builder(ETCD, "greeter").addressRule(rule).hostVariable("POD_IP").port(8080).build();
    try {
      assertThat(reg.address()).isEqualTo("10.9.8.7:8080");
      assertThat(reg.key()).isEqualTo("/services/greeter/10.9.8.7:8080");
    } finally {
      reg.close();
    }
  }

  @Test
  void aHostVariableWithAnExplicitAddressIsRefused() {
    assertThatThrownBy(() -> builder().hostVariable("POD_IP").build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("hostVariable: 'POD_IP' (expected: unset with an explicit address)");
    assertThatThrownBy(() -> ServiceRegistration.builder(ETCD, "greeter").port(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("port: 0 (expected: 1..65535)");
  }
}
