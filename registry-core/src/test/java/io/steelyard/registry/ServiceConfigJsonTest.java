package io.steelyard.registry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Status;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ServiceConfigJsonTest {

  @Test
  void readsAnObjectInTheShapeGrpcsParsersTake() {
    Map<String, ?> config = ServiceConfigJson.parse(
        " {\"loadBalancingConfig\":[{\"weighted_least_request\":{\"choiceCount\":3,\"x\":true}}]} ");

    assertThat(config).isEqualTo(Map.of("loadBalancingConfig",
        List.of(Map.of("weighted_least_request", Map.of("choiceCount", 3.0, "x", true)))));
  }

  @Test
  void numbersAreDoublesAsGrpcsJsonParserMakesThem() {
    Map<String, ?> config = ServiceConfigJson.parse("{\"n\":10}");

    assertThat(config.get("n")).isInstanceOf(Double.class);
  }

  @Test
  void somethingOtherThanAnObjectIsRefusedInOneLine() {
    assertThatThrownBy(() -> ServiceConfigJson.parse("[1]"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("service config: '[1]' (expected: a JSON object)");
  }

  @Test
  void malformedJsonNamesWhere() {
    assertThatThrownBy(() -> ServiceConfigJson.parse("{\"loadBalancingConfig\":"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("service config is not valid JSON: ")
        .hasMessageNotContaining("\n");
  }

  @Test
  void aDuplicateKeyIsRefused() {
    assertThatThrownBy(() -> ServiceConfigJson.parse("{\"a\":1,\"a\":2}"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("duplicate key");
  }

  @Test
  void emptyAndOversizedAreRefused() {
    assertThatThrownBy(() -> ServiceConfigJson.parse("  "))
        .hasMessage("service config: empty (expected: a JSON object)");
    String big = "{\"a\":\"" + "x".repeat(ServiceConfigJson.MAX_CHARS) + "\"}";
    assertThatThrownBy(() -> ServiceConfigJson.parse(big))
        .hasMessageContaining("(expected: at most " + ServiceConfigJson.MAX_CHARS + ")");
  }

  @Test
  void trailingTextIsRefused() {
    assertThatThrownBy(() -> ServiceConfigJson.parse("{} {}"))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void aRefusalGivesTheDescriptionAndTheCausesMessage() {
    Status withCause = Status.UNKNOWN
        .withDescription("failed to parse service config")
        .withCause(new IllegalArgumentException("weighted_random.subset: 3.0 (expected: an object)"));

    assertThat(ServiceConfigJson.refusal(withCause))
        .isEqualTo("failed to parse service config: weighted_random.subset: 3.0 (expected: an object)");
    assertThat(ServiceConfigJson.refusal(Status.INVALID_ARGUMENT.withDescription("bad: refused")))
        .isEqualTo("bad: refused");
    assertThat(ServiceConfigJson.refusal(Status.INVALID_ARGUMENT)).isEqualTo("INVALID_ARGUMENT");
  }
}
