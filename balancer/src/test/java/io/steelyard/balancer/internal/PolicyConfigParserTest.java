package io.steelyard.balancer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.google.common.collect.ImmutableSet;
import io.grpc.NameResolver.ConfigOrError;
import io.grpc.Status;
import io.steelyard.balancer.spi.SlowStartConfig;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import io.steelyard.balancer.spi.ZoneRoutingConfig;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** Forward-compatible configs: unknown fields are ignored with one warning, bad values refused. */
class PolicyConfigParserTest {

  private final Logger logger = (Logger) LoggerFactory.getLogger(PolicyConfigParser.class);
  private final ListAppender<ILoggingEvent> log = new ListAppender<>();

  private final PolicyConfigParser random = new PolicyConfigParser("weighted_random", Set.of());
  private final PolicyConfigParser leastRequest =
      new PolicyConfigParser("weighted_least_request", WeightedPolicyConfig.LEAST_REQUEST_FIELDS);

  @BeforeEach
  void captureLog() {
    log.start();
    logger.addAppender(log);
  }

  @AfterEach
  void releaseLog() {
    logger.detachAppender(log);
  }

  private List<String> warnings() {
    return log.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
  }

  @Test
  void unknownFieldsAreIgnoredAndTheKnownOnesApply() {
    ConfigOrError parsed =
        leastRequest.parse(Map.of("choiceCount", 4.0, "zonePreference", Map.of("local", true)));

    assertThat(parsed.getError()).isNull();
    assertThat(parsed.getConfig())
        .isEqualTo(WeightedPolicyConfig.builder().choiceCount(4).build());
  }

  @Test
  void oneWarningPerDistinctConfigHoweverOftenItIsParsed() {
    // grpc parses the service config again on every resolution: equal maps, new instances.
    for (int i = 0; i < 5; i++) {
      random.parse(new LinkedHashMap<>(Map.of("newOption", 1.0, "panicThresholdPercent", 50.0)));
    }
    assertThat(warnings()).hasSize(1);

    random.parse(Map.of("newOption", 2.0));
    random.parse(Map.of("newOption", 2.0));
    random.parse(Map.of("panicThresholdPercent", 10.0));

    assertThat(warnings()).hasSize(2);
  }

  @Test
  void theWarningNamesThePolicyAndEveryUnknownFieldNestedOnesToo() {
    Map<String, Object> raw = new LinkedHashMap<>();
    raw.put("newOption", true);
    raw.put("slowStart", Map.of("window", "10s", "curve", "cubic"));
    raw.put("zoneRouting", Map.of("zone", "eu-1a", "weightBy", "hosts"));

    ConfigOrError parsed = random.parse(raw);

    assertThat(((WeightedPolicyConfig) parsed.getConfig()).slowStart())
        .isEqualTo(
            new SlowStartConfig(
                TimeUnit.SECONDS.toNanos(10),
                SlowStartConfig.DEFAULT_AGGRESSION,
                SlowStartConfig.DEFAULT_MIN_WEIGHT_PERCENT));
    assertThat(warnings())
        .singleElement()
        .asString()
        .startsWith("weighted_random config ")
        .contains("ignoring unknown fields [newOption, slowStart.curve, zoneRouting.weightBy]")
        .contains("(this version reads [panicThresholdPercent, slowStart, split, subset, subsetClientId, subsetSize, zoneRouting])");
    assertThat(log.list.get(0).getLevel()).isEqualTo(ch.qos.logback.classic.Level.WARN);
  }

  @Test
  void aFieldOfAnotherPolicyIsUnknownHere() {
    ConfigOrError parsed = random.parse(Map.of("choiceCount", 3.0));

    assertThat(parsed.getConfig()).isEqualTo(WeightedPolicyConfig.DEFAULT);
    assertThat(warnings()).singleElement().asString().contains("[choiceCount]");
  }

  @Test
  void aKnownFieldWithABadValueIsStillRefusedWithTheParsersMessage() {
    ConfigOrError parsed = leastRequest.parse(Map.of("choiceCount", 11.0, "newOption", 1.0));

    assertThat(parsed.getConfig()).isNull();
    assertThat(parsed.getError().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(parsed.getError().getDescription())
        .isEqualTo("weighted_least_request.choiceCount: 11.0 (expected: 2..10)");
  }

  @Test
  void zoneRoutingIsReadWithItsDefaults() {
    ConfigOrError parsed =
        leastRequest.parse(Map.of("zoneRouting", Map.of("minLocalEndpoints", 2.0, "zone", "eu-1a")));

    assertThat(parsed.getError()).isNull();
    assertThat(((WeightedPolicyConfig) parsed.getConfig()).zoneRouting())
        .isEqualTo(ZoneRoutingConfig.builder().zone("eu-1a").minLocalEndpoints(2).build());
    assertThat(WeightedPolicyConfig.DEFAULT.zoneRouting()).isEqualTo(ZoneRoutingConfig.DEFAULT);
  }

  @Test
  void zoneRoutingCanBeTurnedOffAndItsLiveLoadSpillToo() {
    ConfigOrError parsed =
        random.parse(Map.of("zoneRouting", Map.of("enabled", false, "spillLoad", 0.0)));

    assertThat(((WeightedPolicyConfig) parsed.getConfig()).zoneRouting())
        .isEqualTo(ZoneRoutingConfig.builder().enabled(false).spillLoad(0).build());
  }

  @Test
  void aBadValueInsideZoneRoutingNamesTheNestedField() {
    assertThat(random.parse(Map.of("zoneRouting", Map.of("minLocalEndpoints", 0.0)))
            .getError().getDescription())
        .isEqualTo("weighted_random.zoneRouting.minLocalEndpoints: 0.0 (expected: a whole number 1..10000)");
    assertThat(random.parse(Map.of("zoneRouting", Map.of("enabled", "yes")))
            .getError().getDescription())
        .isEqualTo("weighted_random.zoneRouting.enabled: yes (expected: true or false)");
    assertThat(random.parse(Map.of("zoneRouting", Map.of("zone", "eu 1a")))
            .getError().getDescription())
        .isEqualTo("weighted_random.zoneRouting.zone: 'eu 1a' (expected: 1..128 characters of"
            + " A-Z a-z 0-9 . _ -, e.g. eu-west-1a)");
    assertThat(random.parse(Map.of("zoneRouting", Map.of("spillLoad", -1.0)))
            .getError().getDescription())
        .isEqualTo("weighted_random.zoneRouting.spillLoad: -1.0 (expected: 0..1000000, 0 = off)");
  }

  @Test
  void anUnknownFieldInsideZoneRoutingIsAWarning() {
    ConfigOrError parsed = random.parse(Map.of("zoneRouting", Map.of("preferRegion", true)));

    assertThat(parsed.getError()).isNull();
    assertThat(warnings()).singleElement().asString().contains("[zoneRouting.preferRegion]");
  }

  @Test
  void aBadValueInsideSlowStartNamesTheNestedField() {
    ConfigOrError parsed = random.parse(Map.of("slowStart", Map.of("window", "soon")));

    assertThat(parsed.getError().getDescription())
        .isEqualTo(
            "weighted_random.slowStart.window: soon (expected: a duration > 0s, e.g. \"30s\")");
  }

  @Test
  void aPolicysOwnFieldIsLeftToItsProviderWithoutAWarning() {
    PolicyConfigParser orca =
        new PolicyConfigParser(
            "weighted_least_request_orca",
            ImmutableSet.<String>builder()
                .addAll(WeightedPolicyConfig.LEAST_REQUEST_FIELDS)
                .add("enableOobLoadReport")
                .build());

    ConfigOrError parsed = orca.parse(Map.of("enableOobLoadReport", true, "latency", true));

    assertThat(parsed.getConfig()).isEqualTo(WeightedPolicyConfig.builder().latency(true).build());
    assertThat(warnings()).isEmpty();
  }
}
