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

  /** Our weighted policies, in the order the scenario tables list them. */
  private static final List<String> WEIGHTED =
      List.of("weighted_random", "weighted_round_robin_static", "weighted_least_request");

  /**
   * Slow start in scenario (e): a window as long as the joiner's warm-up there (4 s, {@code
   * Scenario.COLD_LENGTH}), as a user would set it from a measured warm-up; aggression 1 and the
   * 10 % floor are the defaults. (Written out, not read from Scenario: Scenario's constants
   * read this class's lists, and a cycle between the two initializers would leave one null.)
   */
  static final Map<String, ?> SLOW_START_CONFIG = Map.of("window", "4s");

  /** grpc's round robin and least request as references, then each of ours off and on. */
  static final List<Policy> SLOW_START = slowStartPolicies();

  /**
   * grpc-java's outlier detection as a user of a small service would set it: failure-percentage
   * ejection checked every second (its 10 s default is slow for a 4-server service), ejected for
   * 5 s × times ejected, up to every server (so that the blip of (g) can eject 3 of 4).
   * Success-rate ejection is left out: with 4 servers its mean − 1.9 σ threshold is below 0
   * when 1 or 3 of them fail everything, so it never ejects (and its minimumHosts default is 5).
   */
  static final Map<String, ?> OUTLIER_DETECTION =
      Map.of(
          "interval", "1s",
          "baseEjectionTime", "5s",
          "maxEjectionTime", "30s",
          "maxEjectionPercentage", 100.0,
          "failurePercentageEjection",
              Map.of(
                  "threshold", 50.0,
                  "enforcementPercentage", 100.0,
                  "minimumHosts", 3.0,
                  "requestVolume", 10.0));

  /** The panic threshold of the "+OD +panic" policies, in percent of the servers. */
  static final double PANIC_THRESHOLD_PERCENT = 50;

  /** Each of ours with no parent, under outlier detection, and under it with a panic threshold. */
  static final List<Policy> EJECTION = ejectionPolicies();

  private static List<Policy> slowStartPolicies() {
    List<Policy> policies = new java.util.ArrayList<>();
    policies.add(ALL.get(0));
    policies.add(ALL.get(1));
    for (String name : WEIGHTED) {
      policies.add(of(name, name, Map.of()));
      policies.add(of(name + " +slowStart", name, Map.of("slowStart", SLOW_START_CONFIG)));
    }
    return List.copyOf(policies);
  }

  private static List<Policy> ejectionPolicies() {
    List<Policy> policies = new java.util.ArrayList<>();
    for (String name : WEIGHTED) {
      policies.add(of(name, name, Map.of()));
      policies.add(underOutlierDetection(name + " +OD", name, Map.of()));
      policies.add(
          underOutlierDetection(
              name + " +OD +panic", name, Map.of("panicThresholdPercent", PANIC_THRESHOLD_PERCENT)));
    }
    return List.copyOf(policies);
  }

  private static Policy underOutlierDetection(
      String label, String child, Map<String, ?> childConfig) {
    Map<String, Object> od = new java.util.LinkedHashMap<>(OUTLIER_DETECTION);
    od.put("childPolicy", List.of(Map.of(child, childConfig)));
    return of(label, "outlier_detection_experimental", od);
  }

  /**
   * A policy given on the command line as its name and its JSON config, e.g. {@code
   * weighted_least_request{"errorPenalty": 2}}; the text is its label.
   *
   * @throws IllegalArgumentException naming what is wrong with {@code text}
   */
  @SuppressWarnings("unchecked")
  static Policy variant(String text) {
    int brace = text == null ? -1 : text.indexOf('{');
    if (brace <= 0) {
      throw new IllegalArgumentException("variant: " + text + " (expected: a policy name and its JSON config, e.g. "
          + "weighted_least_request{\"errorPenalty\": 2})");
    }
    String name = text.substring(0, brace).strip();
    Object config;
    try {
      config = io.grpc.internal.JsonParser.parse(text.substring(brace));
    } catch (java.io.IOException | RuntimeException e) {
      throw new IllegalArgumentException("variant: " + text + ": " + e.getMessage());
    }
    if (!(config instanceof Map)) {
      throw new IllegalArgumentException("variant: " + text + " (expected: a JSON object after the name)");
    }
    // Checked as the channel will check it, so that a typo stops the run before its first cell.
    io.grpc.LoadBalancerProvider provider =
        io.grpc.LoadBalancerRegistry.getDefaultRegistry().getProvider(name);
    if (provider == null) {
      throw new IllegalArgumentException("variant: " + text + ": no load-balancing policy named " + name);
    }
    io.grpc.NameResolver.ConfigOrError parsed =
        provider.parseLoadBalancingPolicyConfig((Map<String, ?>) config);
    if (parsed.getError() != null) {
      throw new IllegalArgumentException("variant: " + text + ": " + parsed.getError().getDescription());
    }
    return of(text, name, (Map<String, ?>) config);
  }

  /** Every policy any scenario runs, by label: what {@code --policies} chooses from. */
  static List<Policy> all() {
    java.util.LinkedHashMap<String, Policy> byLabel = new java.util.LinkedHashMap<>();
    for (List<Policy> list : List.of(ALL, SLOW_START, EJECTION)) {
      for (Policy p : list) {
        byLabel.putIfAbsent(p.label(), p);
      }
    }
    return List.copyOf(byLabel.values());
  }

  /** The service config of a channel using this policy. */
  Map<String, ?> serviceConfig() {
    return Map.of("loadBalancingConfig", List.of(config));
  }
}
