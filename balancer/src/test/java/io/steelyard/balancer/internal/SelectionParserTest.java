package io.steelyard.balancer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.NameResolver.ConfigOrError;
import io.grpc.Status;
import io.grpc.internal.JsonParser;
import java.io.IOException;
import java.io.UncheckedIOException;
import io.steelyard.balancer.spi.EndpointSelection;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The {@code subset} and {@code split} options as JSON: what they mean, what they refuse. */
class SelectionParserTest {

  private final PolicyConfigParser parser = new PolicyConfigParser("weighted_random", Set.of());

  /** Through grpc's own service-config JSON parser: maps, lists, strings and doubles. */
  @SuppressWarnings("unchecked")
  private ConfigOrError parse(String json) {
    try {
      return parser.parse((Map<String, ?>) JsonParser.parse(json));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private EndpointSelection selection(String json) {
    ConfigOrError parsed = parse(json);
    assertThat(parsed.getError()).as("error").isNull();
    return ((WeightedPolicyConfig) parsed.getConfig()).endpointSelection();
  }

  private String error(String json) {
    Status error = parse(json).getError();
    assertThat(error).as("error for %s", json).isNotNull();
    assertThat(error.getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(error.getDescription()).doesNotContain("\n");
    return error.getDescription();
  }

  @Test
  void aSubsetOptionWithoutFallbackFallsBackToAnyEndpoint() {
    EndpointSelection selection = selection("{\"subset\": {\"selector\": {\"version\": \"v2\"}}}");

    assertThat(selection).isEqualTo(EndpointSelection.select(List.of(Map.of("version", "v2")), true));
  }

  @Test
  void fallbackSelectorsChainInOrderAndEndInAnyOrNone() {
    EndpointSelection selection = selection("{\"subset\": {\"selector\": {\"version\": \"v2\", \"zone\": \"a\"},"
        + " \"fallback\": {\"selector\": {\"version\": \"v2\"}, \"fallback\": \"none\"}}}");

    assertThat(selection)
        .isEqualTo(EndpointSelection.select(
            List.of(Map.of("version", "v2", "zone", "a"), Map.of("version", "v2")), false));
    assertThat(selection).hasToString("subset[{version=v2, zone=a} else {version=v2} else none]");
  }

  @Test
  void aSplitKeepsItsEntriesInOrderWithPercentsInHundredths() {
    EndpointSelection selection = selection("{\"split\": [{\"selector\": {\"version\": \"v1\"}, \"percent\": 99.5},"
        + " {\"selector\": {\"version\": \"v2\"}, \"percent\": 0.5}]}");

    assertThat(selection.isSplit()).isTrue();
    assertThat(selection.selectors()).containsExactly(Map.of("version", "v1"), Map.of("version", "v2"));
    assertThat(selection.basisPoints(0)).isEqualTo(9950);
    assertThat(selection.basisPoints(1)).isEqualTo(50);
    assertThat(selection).hasToString("split[{version=v1} 99.5%, {version=v2} 0.5%]");
  }

  @Test
  void aSplitMayGiveAnEntryNothing() {
    EndpointSelection selection = selection("{\"split\": [{\"selector\": {\"version\": \"v1\"}, \"percent\": 100},"
        + " {\"selector\": {\"version\": \"v2\"}, \"percent\": 0}]}");

    assertThat(selection.basisPoints(1)).isZero();
  }

  @Test
  void percentsThatDoNotSumTo100AreRefused() {
    assertThat(error("{\"split\": [{\"selector\": {\"version\": \"v1\"}, \"percent\": 90},"
        + " {\"selector\": {\"version\": \"v2\"}, \"percent\": 5}]}"))
        .isEqualTo("weighted_random.split: percents sum to 95 (expected: 100)");
  }

  @Test
  void aPercentOutOfRangeOrTooFineNamesTheEntry() {
    assertThat(error("{\"split\": [{\"selector\": {\"version\": \"v1\"}, \"percent\": 120}]}"))
        .isEqualTo("weighted_random.split[0].percent: 120.0 (expected: a number 0..100 in steps of 0.01)");
    assertThat(error("{\"split\": [{\"selector\": {\"version\": \"v1\"}, \"percent\": 99.995},"
        + " {\"selector\": {\"version\": \"v2\"}, \"percent\": 0.005}]}"))
        .isEqualTo("weighted_random.split[0].percent: 99.995 (expected: a number 0..100 in steps of 0.01)");
    assertThat(error("{\"split\": [{\"selector\": {\"version\": \"v1\"}, \"percent\": \"90\"}]}"))
        .isEqualTo("weighted_random.split[0].percent: 90 (expected: a number 0..100 in steps of 0.01)");
    assertThat(error("{\"split\": [{\"selector\": {\"version\": \"v1\"}}]}"))
        .isEqualTo("weighted_random.split[0].percent: missing (expected: a number 0..100 in steps of 0.01)");
  }

  @Test
  void aSplitThatIsNotAListOfEntriesIsRefused() {
    assertThat(error("{\"split\": []}"))
        .isEqualTo("weighted_random.split: [] (expected: a list of 1..8 entries,"
            + " [{\"selector\": {...}, \"percent\": 90}, ...])");
    assertThat(error("{\"split\": [\"v1\"]}"))
        .isEqualTo("weighted_random.split[0]: v1 (expected: an object,"
            + " [{\"selector\": {...}, \"percent\": 90}, ...])");
  }

  @Test
  void theSameSelectorTwiceInASplitIsRefused() {
    assertThat(error("{\"split\": [{\"selector\": {\"version\": \"v1\"}, \"percent\": 50},"
        + " {\"selector\": {\"version\": \"v1\"}, \"percent\": 50}]}"))
        .isEqualTo("weighted_random.split[1].selector: {version=v1} repeats split[0]'s"
            + " (expected: a different selector per entry)");
  }

  @Test
  void badSelectorsNameTheirPath() {
    assertThat(error("{\"subset\": {\"selector\": {}}}"))
        .isEqualTo("weighted_random.subset.selector: {} (expected: at least one label,"
            + " e.g. {\"version\": \"v2\"})");
    assertThat(error("{\"subset\": {\"fallback\": \"any\"}}"))
        .isEqualTo("weighted_random.subset.selector: missing (expected: an object of string labels,"
            + " e.g. {\"version\": \"v2\"})");
    assertThat(error("{\"subset\": {\"selector\": {\"version\": 2}}}"))
        .isEqualTo("weighted_random.subset.selector.version: 2.0 (expected: a string, as metadata"
            + " values are; write \"2.0\")");
    assertThat(error("{\"subset\": {\"selector\": {\"version\": \"v2\"}, \"fallback\": {\"selector\": []}}}"))
        .isEqualTo("weighted_random.subset.fallback.selector: [] (expected: an object of string labels,"
            + " e.g. {\"version\": \"v2\"})");
  }

  @Test
  void anUnknownFallbackIsRefused() {
    assertThat(error("{\"subset\": {\"selector\": {\"version\": \"v2\"}, \"fallback\": \"all\"}}"))
        .isEqualTo("weighted_random.subset.fallback: \"all\" (expected: \"any\", \"none\""
            + " or an object with \"selector\")");
  }

  @Test
  void aFallbackChainLongerThanEightSelectorsIsRefused() {
    String json = "\"none\"";
    for (int i = 9; i >= 1; i--) {
      json = "{\"selector\": {\"v\": \"" + i + "\"}, \"fallback\": " + json + "}";
    }
    assertThat(error("{\"subset\": " + json + "}"))
        .isEqualTo("weighted_random.subset" + ".fallback".repeat(8)
            + ": more than 8 selectors (expected: at most 8)");
  }

  @Test
  void subsetAndSplitTogetherAreRefused() {
    assertThat(error("{\"subset\": {\"selector\": {\"version\": \"v2\"}},"
        + " \"split\": [{\"selector\": {\"version\": \"v1\"}, \"percent\": 100}]}"))
        .isEqualTo("weighted_random.split: set together with subset (expected: one of them)");
  }

  @Test
  void theOptionsComposeWithTheOtherFields() {
    ConfigOrError parsed = parse("{\"panicThresholdPercent\": 50,"
        + " \"subset\": {\"selector\": {\"version\": \"v2\"}, \"fallback\": \"none\"}}");

    assertThat(parsed.getConfig())
        .isEqualTo(WeightedPolicyConfig.builder()
            .panicThresholdPercent(50)
            .endpointSelection(EndpointSelection.select(List.of(Map.of("version", "v2")), false))
            .build());
  }
}
