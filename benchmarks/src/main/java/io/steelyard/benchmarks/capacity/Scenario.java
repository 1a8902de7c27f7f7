package io.steelyard.benchmarks.capacity;

import io.steelyard.testkit.grpc.CapacityBackend;
import java.util.List;
import java.util.function.BiConsumer;

/**
 * One situation of the capacity benchmark: whether the registered weights tell the servers'
 * capacities, and what happens to the fleet during the measured period ({@code event}, applied
 * at {@link CapacityBench#EVENT_AT} into it; null for none).
 */
record Scenario(
    String id,
    String title,
    boolean weightsKnown,
    BiConsumer<CapacityMix, List<CapacityBackend>> event) {

  /** Slowdown of the degraded server in (c). */
  static final double DEGRADE_FACTOR = 4.0;

  /** Share of calls the failing server fails in (d). */
  static final double FAILURE_RATIO = 0.5;

  static final Scenario WEIGHTS_RIGHT =
      new Scenario("a", "registered weights match capacity", true, null);

  static final Scenario WEIGHTS_UNKNOWN =
      new Scenario("b", "weights unknown (all registered 1)", false, null);

  static final Scenario LARGEST_DEGRADES =
      new Scenario(
          "c",
          "the largest server slows down " + (int) DEGRADE_FACTOR + "x mid-run",
          true,
          (mix, backends) -> backends.get(mix.largest()).setSlowdown(DEGRADE_FACTOR));

  static final Scenario LARGEST_FAILS_HALF =
      new Scenario(
          "d",
          "the largest server fails " + (int) (FAILURE_RATIO * 100) + " % of its calls from mid-run",
          true,
          (mix, backends) -> backends.get(mix.largest()).setFailureRatio(FAILURE_RATIO));

  /** Every scenario of the default run; add one here and it runs for every mix and policy. */
  static final List<Scenario> ALL =
      List.of(WEIGHTS_RIGHT, WEIGHTS_UNKNOWN, LARGEST_DEGRADES, LARGEST_FAILS_HALF);

  /** The weight each server registers. */
  int weight(CapacityMix mix, int server) {
    return weightsKnown ? mix.workers()[server] : 1;
  }
}
