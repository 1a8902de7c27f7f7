package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.steelyard.balancer.spi.SlowStartConfig;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class StoredPolicyTest {

  @Test
  void noneStoredOrNoSteelyardPolicyGivesTheDefaults() {
    assertThat(StoredPolicy.parse(null)).isEqualTo(StoredPolicy.DEFAULT);
    assertThat(StoredPolicy.parse("{}")).isEqualTo(StoredPolicy.DEFAULT);
    assertThat(StoredPolicy.parse("{\"loadBalancingConfig\":[{\"round_robin\":{}}]}"))
        .isEqualTo(StoredPolicy.DEFAULT);
    assertThat(StoredPolicy.DEFAULT.zoneRouting().enabled()).isTrue();
    assertThat(StoredPolicy.DEFAULT.slowStart()).isNull();
  }

  @Test
  void theFirstSteelyardPolicysOptionsAreRead() {
    StoredPolicy p = StoredPolicy.parse(
        "{\"loadBalancingConfig\":[{\"unknown_policy\":{}},{\"weighted_random\":"
            + "{\"zoneRouting\":{\"enabled\":false},\"slowStart\":{\"window\":\"10s\"}}}]}");
    assertThat(p.zoneRouting().enabled()).isFalse();
    assertThat(p.slowStart()).isEqualTo(new SlowStartConfig(Duration.ofSeconds(10).toNanos(), 1.0, 10));
  }

  @Test
  void refusedOptionsThrowWithTheParsersReason() {
    assertThatThrownBy(() -> StoredPolicy.parse(
            "{\"loadBalancingConfig\":[{\"weighted_least_request\":{\"slowStart\":{\"window\":\"-1s\"}}}]}"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("window");
    assertThatThrownBy(() -> StoredPolicy.parse(
            "{\"loadBalancingConfig\":[{\"weighted_random\":{\"zoneRouting\":{\"minLocalEndpoints\":0}}}]}"))
        .hasMessageContaining("minLocalEndpoints");
    assertThatThrownBy(() -> StoredPolicy.parse("{not json"))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
