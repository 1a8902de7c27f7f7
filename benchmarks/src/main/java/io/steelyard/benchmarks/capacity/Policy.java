package io.steelyard.benchmarks.capacity;

import java.util.List;
import java.util.Map;

/** A load-balancing policy under test: a label and the service config that selects it. */
record Policy(String label, Map<String, ?> config) {

  static Policy of(String label, String policyName, Map<String, ?> policyConfig) {
    return new Policy(label, Map.of(policyName, policyConfig));
  }

  /**
   * Every policy of the default run, side by side; add one here and it runs everywhere. grpc's
   * weighted_round_robin gets a 1 s blackout instead of its 10 s default, or it would spend most
   * of a 14 s run as round robin (the blackout only delays an endpoint's first weight).
   */
  static final List<Policy> ALL =
      List.of(
          of("round_robin", "round_robin", Map.of()),
          of("least_request_experimental", "least_request_experimental", Map.of("choiceCount", 2.0)),
          of("weighted_round_robin (ORCA)", "weighted_round_robin", Map.of("blackoutPeriod", "1s")),
          of("weighted_random", "weighted_random", Map.of()),
          of("weighted_round_robin_static", "weighted_round_robin_static", Map.of()),
          of("weighted_least_request", "weighted_least_request", Map.of()),
          of("weighted_least_request +latency", "weighted_least_request", Map.of("latency", true)),
          of("weighted_least_request_orca", "weighted_least_request_orca", Map.of()));

  /** The service config of a channel using this policy. */
  Map<String, ?> serviceConfig() {
    return Map.of("loadBalancingConfig", List.of(config));
  }
}
