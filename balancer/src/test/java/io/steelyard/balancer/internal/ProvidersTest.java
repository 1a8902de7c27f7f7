package io.steelyard.balancer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.LoadBalancerProvider;
import io.grpc.NameResolver.ConfigOrError;
import io.grpc.Status;
import io.steelyard.balancer.WeightedRandomLoadBalancerProvider;
import io.steelyard.balancer.WeightedRoundRobinStaticLoadBalancerProvider;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The public providers as grpc's registry sees them: names, config parsing. */
class ProvidersTest {

  private static LoadBalancerProvider provider(String name) {
    return name.equals(WeightedRandomLoadBalancerProvider.POLICY_NAME)
        ? new WeightedRandomLoadBalancerProvider()
        : new WeightedRoundRobinStaticLoadBalancerProvider();
  }

  @Test
  void eachProviderAnswersToItsPublishedName() {
    assertThat(new WeightedRandomLoadBalancerProvider().getPolicyName())
        .isEqualTo(WeightedRandomLoadBalancerProvider.POLICY_NAME)
        .isEqualTo("weighted_random");
    assertThat(new WeightedRoundRobinStaticLoadBalancerProvider().getPolicyName())
        .isEqualTo(WeightedRoundRobinStaticLoadBalancerProvider.POLICY_NAME)
        .isEqualTo("weighted_round_robin_static");
  }

  @ParameterizedTest
  @ValueSource(strings = {"weighted_random", "weighted_round_robin_static"})
  void emptyConfigParsesToTheDefaultConfigObject(String name) {
    ConfigOrError parsed = provider(name).parseLoadBalancingPolicyConfig(Map.of());

    assertThat(parsed.getError()).isNull();
    assertThat(parsed.getConfig()).isSameAs(WeightedPolicyConfig.DEFAULT);
  }

  @ParameterizedTest
  @ValueSource(strings = {"weighted_random", "weighted_round_robin_static"})
  void panicThresholdPercentIsParsed(String name) {
    ConfigOrError parsed =
        provider(name).parseLoadBalancingPolicyConfig(Map.of("panicThresholdPercent", 50.0));

    assertThat(parsed.getError()).isNull();
    assertThat(((WeightedPolicyConfig) parsed.getConfig()).panicThresholdPercent()).isEqualTo(50);
  }

  @ParameterizedTest
  @ValueSource(strings = {"150", "-1", "12.5", "\"half\""})
  void panicThresholdPercentOutsideZeroToHundredIsAConfigError(String value) {
    Object raw = value.startsWith("\"") ? value.replace("\"", "") : Double.parseDouble(value);

    ConfigOrError parsed =
        new WeightedRandomLoadBalancerProvider()
            .parseLoadBalancingPolicyConfig(Map.of("panicThresholdPercent", raw));

    assertThat(parsed.getConfig()).isNull();
    assertThat(parsed.getError().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(parsed.getError().getDescription())
        .isEqualTo(
            "weighted_random.panicThresholdPercent: "
                + raw
                + " (expected: a whole number 0..100)");
  }

  @Test
  void nullFieldValueIsStillAnUnknownField() {
    Map<String, Object> raw = new HashMap<>();
    raw.put("subsetSize", null);

    ConfigOrError parsed = new WeightedRandomLoadBalancerProvider().parseLoadBalancingPolicyConfig(raw);

    assertThat(parsed.getError().getDescription()).startsWith("weighted_random.subsetSize:");
  }
}
