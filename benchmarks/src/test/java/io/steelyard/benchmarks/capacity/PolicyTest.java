package io.steelyard.benchmarks.capacity;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PolicyTest {

  @Test
  void aVariantIsItsPolicyWithItsConfigUnderItsOwnText() {
    Policy p = Policy.variant("weighted_least_request{\"choiceCount\": 4, \"errorPenalty\": 2}");

    assertThat(p.label()).isEqualTo("weighted_least_request{\"choiceCount\": 4, \"errorPenalty\": 2}");
    assertThat(p.serviceConfig())
        .isEqualTo(
            Map.of(
                "loadBalancingConfig",
                List.of(
                    Map.of(
                        "weighted_least_request",
                        Map.of("choiceCount", 4.0, "errorPenalty", 2.0)))));
  }

  @Test
  void aVariantOfGrpcsOwnPolicyIsAccepted() {
    Policy p = Policy.variant("least_request_experimental{\"choiceCount\": 3}");

    assertThat(p.config()).isEqualTo(Map.of("least_request_experimental", Map.of("choiceCount", 3.0)));
  }

  @Test
  void aNameWithoutConfigIsRefusedWithTheExpectedForm() {
    assertThatThrownBy(() -> Policy.variant("weighted_least_request"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("expected: a policy name and its JSON config");
    assertThatThrownBy(() -> Policy.variant("{\"choiceCount\": 4}"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("expected: a policy name and its JSON config");
  }

  @Test
  void malformedJsonIsRefused() {
    assertThatThrownBy(() -> Policy.variant("weighted_least_request{\"choiceCount\": }"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("variant: weighted_least_request{\"choiceCount\": }: ");
  }

  @Test
  void anUnknownPolicyIsRefusedByName() {
    assertThatThrownBy(() -> Policy.variant("weighted_least_requests{}"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageEndingWith("no load-balancing policy named weighted_least_requests");
  }

  @Test
  void aConfigThePolicyRejectsIsRefusedWithThePolicysReason() {
    assertThatThrownBy(() -> Policy.variant("weighted_least_request{\"choiceCount\": 11}"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("weighted_least_request.choiceCount: 11")
        .hasMessageContaining("(expected: 2..10)");
  }
}
