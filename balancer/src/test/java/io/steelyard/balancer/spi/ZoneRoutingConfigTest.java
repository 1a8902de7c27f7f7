package io.steelyard.balancer.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ZoneRoutingConfigTest {

  @Test
  void settingsLeftOutKeepTheirDefaults() {
    ZoneRoutingConfig config = ZoneRoutingConfig.builder().zone("eu-1a").build();

    assertThat(config.enabled()).isTrue();
    assertThat(config.zone()).isEqualTo("eu-1a");
    assertThat(config.minLocalEndpoints())
        .isEqualTo(ZoneRoutingConfig.DEFAULT_MIN_LOCAL_ENDPOINTS);
    assertThat(config.spillLoad()).isEqualTo(ZoneRoutingConfig.DEFAULT_SPILL_LOAD);
    assertThat(ZoneRoutingConfig.builder().build()).isEqualTo(ZoneRoutingConfig.DEFAULT);
    assertThat(ZoneRoutingConfig.DEFAULT.zone()).isNull();
  }

  @Test
  void aZoneNameOutsideTheRegistrysRuleIsRejected() {
    assertThatThrownBy(() -> ZoneRoutingConfig.builder().zone("eu 1a"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "zone: 'eu 1a' (expected: 1..128 characters of A-Z a-z 0-9 . _ -, e.g. eu-west-1a)");
    assertThatThrownBy(() -> ZoneRoutingConfig.builder().zone(""))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void outOfRangeNumbersAreRejected() {
    assertThatThrownBy(() -> ZoneRoutingConfig.builder().minLocalEndpoints(0))
        .hasMessage("minLocalEndpoints: 0 (expected: 1..10000)");
    assertThatThrownBy(() -> ZoneRoutingConfig.builder().spillLoad(-1))
        .hasMessage("spillLoad: -1.0 (expected: 0..1000000.0)");
  }
}
