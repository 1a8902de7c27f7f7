package io.steelyard.benchmarks.capacity;

import io.steelyard.testkit.grpc.CapacityBackend;
import java.time.Duration;
import java.util.List;
import java.util.function.BiConsumer;

/**
 * One situation of the capacity benchmark: whether the registered weights tell the servers'
 * capacities, and what happens to the fleet during the measured period ({@code event}, applied
 * at {@link CapacityBench#EVENT_AT} into it; null for none).
 *
 * @param joins the last server of the mix is left out of the first resolution and joins (arrives
 *     in a resolver update, as a new registration does) at the event, after the event ran
 * @param eventLength how long the event lasts, after which {@code eventEnd} runs; null: to the end
 * @param table which figures the report gives for it
 * @param policies the policies it runs with by default; empty: {@link Policy#ALL}
 * @param mixes the mixes it runs on by default; empty: {@link CapacityMix#ALL}
 */
record Scenario(
    String id,
    String title,
    boolean weightsKnown,
    BiConsumer<CapacityMix, List<CapacityBackend>> event,
    boolean joins,
    Duration eventLength,
    BiConsumer<CapacityMix, List<CapacityBackend>> eventEnd,
    Table table,
    List<Policy> policies,
    List<CapacityMix> mixes) {

  /** The report's figures for a scenario. */
  enum Table {
    /** Latency, failures and shares over the whole run and its second half. */
    STEADY,
    /** The same for the seconds after a server joined, and the joiner's share second by second. */
    JOIN,
    /** Failures, latency and traffic on the failing servers from the event on. */
    FAILING
  }

  /** Slowdown of the degraded server in (c). */
  static final double DEGRADE_FACTOR = 4.0;

  /** Share of calls the failing server fails in (d). */
  static final double FAILURE_RATIO = 0.5;

  /** The joining server's service times in (e) start this many times longer... */
  static final double COLD_FACTOR = 4.0;

  /** ...and fall linearly to normal over this long. */
  static final Duration COLD_LENGTH = Duration.ofSeconds(4);

  /** How many of the four servers fail every call in (g), and for how long. */
  static final int BLIP_SERVERS = 3;

  static final Duration BLIP_LENGTH = Duration.ofSeconds(1);

  static final Scenario WEIGHTS_RIGHT = steady("a", "registered weights match capacity", true, null);

  static final Scenario WEIGHTS_UNKNOWN =
      steady("b", "weights unknown (all registered 1)", false, null);

  static final Scenario LARGEST_DEGRADES =
      steady(
          "c",
          "the largest server slows down " + (int) DEGRADE_FACTOR + "x mid-run",
          true,
          (mix, backends) -> backends.get(mix.largest()).setSlowdown(DEGRADE_FACTOR));

  static final Scenario LARGEST_FAILS_HALF =
      steady(
          "d",
          "the largest server fails " + (int) (FAILURE_RATIO * 100) + " % of its calls from mid-run",
          true,
          (mix, backends) -> backends.get(mix.largest()).setFailureRatio(FAILURE_RATIO));

  static final Scenario COLD_SERVER_JOINS =
      new Scenario(
          "e",
          "a cold server joins mid-run (service time " + (int) COLD_FACTOR + "x, normal after "
              + COLD_LENGTH.toSeconds() + " s)",
          true,
          (mix, backends) -> backends.get(backends.size() - 1).startWarmUp(COLD_FACTOR, COLD_LENGTH),
          true,
          null,
          null,
          Table.JOIN,
          Policy.SLOW_START,
          List.of());

  static final Scenario SERVER_FAILS_ALL =
      failing(
          "f",
          "a server fails every call from mid-run",
          (mix, backends) -> backends.get(mix.largest()).setFailureRatio(1.0),
          null,
          null);

  static final Scenario MOST_FAIL_BRIEFLY =
      failing(
          "g",
          BLIP_SERVERS + " of 4 servers fail every call for " + BLIP_LENGTH.toSeconds() + " s mid-run",
          (mix, backends) -> setFailing(backends, 1.0),
          BLIP_LENGTH,
          (mix, backends) -> setFailing(backends, 0.0));

  /** Every scenario of the default run; add one here and it runs for every mix and policy. */
  static final List<Scenario> ALL =
      List.of(WEIGHTS_RIGHT, WEIGHTS_UNKNOWN, LARGEST_DEGRADES, LARGEST_FAILS_HALF);

  /**
   * Scenarios run only when named ({@code --scenarios e,f,g}), each with its own policies, on
   * every mix: they compare options of our policies rather than every policy.
   */
  static final List<Scenario> SELECTABLE =
      List.of(COLD_SERVER_JOINS, SERVER_FAILS_ALL, MOST_FAIL_BRIEFLY);

  private static Scenario steady(
      String id, String title, boolean weightsKnown,
      BiConsumer<CapacityMix, List<CapacityBackend>> event) {
    return new Scenario(
        id, title, weightsKnown, event, false, null, null, Table.STEADY, List.of(), List.of());
  }

  /** Servers fail calls: ejection and the panic threshold compared, on every mix. */
  private static Scenario failing(
      String id, String title,
      BiConsumer<CapacityMix, List<CapacityBackend>> event,
      Duration eventLength,
      BiConsumer<CapacityMix, List<CapacityBackend>> eventEnd) {
    return new Scenario(
        id, title, true, event, false, eventLength, eventEnd, Table.FAILING, Policy.EJECTION,
        List.of());
  }

  /** The first {@link #BLIP_SERVERS} servers fail every call (1.0) or none (0.0). */
  private static void setFailing(List<CapacityBackend> backends, double ratio) {
    for (int i = 0; i < BLIP_SERVERS; i++) {
      backends.get(i).setFailureRatio(ratio);
    }
  }

  /** The same scenario run with {@code policies} instead of its own. */
  Scenario withPolicies(List<Policy> policies) {
    return new Scenario(
        id, title, weightsKnown, event, joins, eventLength, eventEnd, table, policies, mixes);
  }

  /** The weight each server registers. */
  int weight(CapacityMix mix, int server) {
    return weightsKnown ? mix.workers()[server] : 1;
  }

  /** The servers the event touches: the joiner, the failing ones, the largest. */
  int[] affected(CapacityMix mix) {
    if (joins) {
      return new int[] {mix.workers().length - 1};
    }
    if (eventEnd != null) {
      int[] servers = new int[BLIP_SERVERS];
      for (int i = 0; i < BLIP_SERVERS; i++) {
        servers[i] = i;
      }
      return servers;
    }
    return new int[] {mix.largest()};
  }
}
