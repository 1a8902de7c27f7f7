package io.steelyard.balancer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.NameResolver.ConfigOrError;
import io.grpc.Status;
import io.steelyard.balancer.spi.SlowStartConfig;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Parsing {@code slowStart} in every weighted policy's config, and its errors. */
class SlowStartConfigTest {

  private static final String[] POLICIES = {
    "weighted_random", "weighted_round_robin_static", "weighted_least_request"
  };

  private static ConfigOrError parse(String policy, Object slowStart) {
    Set<String> fields =
        policy.equals("weighted_least_request")
            ? WeightedPolicyConfig.LEAST_REQUEST_FIELDS
            : Set.of();
    return new PolicyConfigParser(policy, fields).parse(Map.of("slowStart", slowStart));
  }

  @ParameterizedTest
  @ValueSource(strings = {"weighted_random", "weighted_round_robin_static", "weighted_least_request"})
  void everyPolicyAcceptsTheFullOption(String policy) {
    ConfigOrError parsed =
        parse(policy, Map.of("window", "30s", "aggression", 2.5, "minWeightPercent", 20.0));

    assertThat(parsed.getError()).isNull();
    assertThat(((WeightedPolicyConfig) parsed.getConfig()).slowStart())
        .isEqualTo(new SlowStartConfig(TimeUnit.SECONDS.toNanos(30), 2.5, 20));
  }

  @ParameterizedTest
  @ValueSource(strings = {"weighted_random", "weighted_round_robin_static", "weighted_least_request"})
  void onlyTheWindowIsRequiredTheRestDefaultsAsEnvoy(String policy) {
    ConfigOrError parsed = parse(policy, Map.of("window", "1.5s"));

    assertThat(((WeightedPolicyConfig) parsed.getConfig()).slowStart())
        .isEqualTo(new SlowStartConfig(1_500_000_000L, 1.0, 10));
    assertThat(WeightedPolicyConfig.DEFAULT.slowStart()).isNull();
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "{}                                        | slowStart.window: missing (expected: a duration > 0s, e.g. \"30s\")",
        "{window=0s}                               | slowStart.window: 0s (expected: a duration > 0s, e.g. \"30s\")",
        "{window=30}                               | slowStart.window: 30.0 (expected: a duration > 0s, e.g. \"30s\")",
        "{window=30s, aggression=0}                | slowStart.aggression: 0.0 (expected: a number > 0 and <= 100.0)",
        "{window=30s, aggression=fast}             | slowStart.aggression: fast (expected: a number > 0 and <= 100.0)",
        "{window=30s, minWeightPercent=0}          | slowStart.minWeightPercent: 0.0 (expected: a whole number 1..100)",
        "{window=30s, minWeightPercent=12.5}       | slowStart.minWeightPercent: 12.5 (expected: a whole number 1..100)",
        "{window=30s, minWeightPercent=101}        | slowStart.minWeightPercent: 101.0 (expected: a whole number 1..100)",
        "on                                        | slowStart: on (expected: an object with \"window\")",
      })
  void badValuesAreErrorsNamingPolicyAndField(String raw, String message) {
    for (String policy : POLICIES) {
      ConfigOrError parsed = parse(policy, json(raw.strip()));

      assertThat(parsed.getConfig()).isNull();
      assertThat(parsed.getError().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
      assertThat(parsed.getError().getDescription()).isEqualTo(policy + "." + message.strip());
    }
  }

  /** {@code {k=v, ...}} as Gson would parse it: numbers are doubles, other values strings. */
  private static Object json(String raw) {
    if (!raw.startsWith("{")) {
      return raw;
    }
    Map<String, Object> map = new java.util.LinkedHashMap<>();
    String body = raw.substring(1, raw.length() - 1).strip();
    if (body.isEmpty()) {
      return map;
    }
    for (String pair : body.split(",")) {
      String[] kv = pair.strip().split("=");
      Object value;
      try {
        value = Double.parseDouble(kv[1]);
      } catch (NumberFormatException e) {
        value = kv[1];
      }
      map.put(kv[0], value);
    }
    return map;
  }
}
