package io.steelyard.balancer.internal;

import io.steelyard.balancer.spi.AliasTable;

import static io.steelyard.balancer.internal.TestPickers.childPickers;
import static io.steelyard.balancer.internal.TestPickers.indexOf;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.grpc.LoadBalancer.PickResult;
import io.grpc.Status;
import io.steelyard.balancer.spi.TracerDecorator;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The choice among candidates and the score, with scripted draws and fake time. */
class LeastRequestPickerTest {

  private final FakeTicker ticker = new FakeTicker();

  /** Random bits chosen by the test: {@link #column} makes the alias table pick a column. */
  static final class ScriptedRandom extends Random {
    private final Deque<Long> values = new ArrayDeque<>();

    ScriptedRandom then(long value) {
      values.add(value);
      return this;
    }

    /** Bits that select column {@code c} of {@code n} and keep it (coin 0 < any threshold). */
    static long column(int c, int n) {
      long high = (((long) c << 32) + n - 1) / n; // smallest h with (h * n) >>> 32 == c
      return high << 32;
    }

    @Override
    public long nextLong() {
      if (values.isEmpty()) {
        throw new AssertionError("the picker drew more random numbers than scripted");
      }
      return values.poll();
    }

    boolean exhausted() {
      return values.isEmpty();
    }
  }

  private EndpointLoad[] loads(int n) {
    EndpointLoad[] loads = new EndpointLoad[n];
    for (int i = 0; i < n; i++) {
      loads[i] = new EndpointLoad(ticker, WeightedPolicyConfig.DEFAULT, TracerDecorator.NONE);
    }
    return loads;
  }

  private static void busy(EndpointLoad load, int calls) {
    for (int i = 0; i < calls; i++) {
      load.callStarted();
    }
  }

  private LeastRequestPicker picker(int[] weights, EndpointLoad[] loads, int choices, Random random) {
    return new LeastRequestPicker(childPickers(weights.length), weights, loads, choices, false, random);
  }

  @Test
  void theCandidateWithFewerOutstandingCallsWins() {
    EndpointLoad[] loads = loads(4);
    busy(loads[1], 3);
    busy(loads[2], 1);
    ScriptedRandom random =
        new ScriptedRandom().then(ScriptedRandom.column(1, 4)).then(ScriptedRandom.column(2, 4));

    int chosen = picker(new int[] {1, 1, 1, 1}, loads, 2, random).choose();

    assertThat(chosen).isEqualTo(2);
    assertThat(random.exhausted()).isTrue();
  }

  @Test
  void loadCountsRelativeToWeight() {
    EndpointLoad[] loads = loads(4);
    busy(loads[0], 2); // weight 4: (2 + 1) / 4 = 0.75
    // endpoint 3, weight 1, idle: (0 + 1) / 1 = 1
    int[] weights = {4, 1, 1, 1};
    // Column choice with equal-probability columns does not apply to unequal weights; script
    // the alias draw by the table: find bits that land on endpoints 3 and 0.
    long[] table = AliasTable.of(weights);
    ScriptedRandom random = new ScriptedRandom().then(bitsFor(table, 3)).then(bitsFor(table, 0));

    assertThat(picker(weights, loads, 2, random).choose()).isEqualTo(0);

    busy(loads[0], 2); // now (4 + 1) / 4 = 1.25 > 1
    random = new ScriptedRandom().then(bitsFor(table, 3)).then(bitsFor(table, 0));
    assertThat(picker(weights, loads, 2, random).choose()).isEqualTo(3);
  }

  @Test
  void idleLargerServerBeatsIdleSmallerOne() {
    EndpointLoad[] loads = loads(3);
    int[] weights = {1, 8, 1};
    long[] table = AliasTable.of(weights);
    ScriptedRandom random = new ScriptedRandom().then(bitsFor(table, 0)).then(bitsFor(table, 1));

    assertThat(picker(weights, loads, 2, random).choose()).isEqualTo(1);
  }

  @Test
  void tiesGoToTheFirstCandidateDrawn() {
    EndpointLoad[] loads = loads(3);
    ScriptedRandom random =
        new ScriptedRandom().then(ScriptedRandom.column(2, 3)).then(ScriptedRandom.column(0, 3));

    assertThat(picker(new int[] {1, 1, 1}, loads, 2, random).choose()).isEqualTo(2);
  }

  @Test
  void aSecondDrawOfTheSameEndpointIsRedrawn() {
    EndpointLoad[] loads = loads(3);
    busy(loads[0], 5);
    ScriptedRandom random =
        new ScriptedRandom()
            .then(ScriptedRandom.column(0, 3))
            .then(ScriptedRandom.column(0, 3))
            .then(ScriptedRandom.column(0, 3))
            .then(ScriptedRandom.column(1, 3));

    assertThat(picker(new int[] {1, 1, 1}, loads, 2, random).choose()).isEqualTo(1);
    assertThat(random.exhausted()).isTrue();
  }

  @Test
  void redrawsAreBoundedSoASkewedTableCannotLoopLong() {
    EndpointLoad[] loads = loads(3);
    ScriptedRandom random = new ScriptedRandom();
    for (int i = 0; i < 1 + 1 + LeastRequestPicker.MAX_REDRAWS; i++) {
      random.then(ScriptedRandom.column(0, 3));
    }

    assertThat(picker(new int[] {1, 1, 1}, loads, 2, random).choose()).isEqualTo(0);
    assertThat(random.exhausted()).isTrue();
  }

  @Test
  void moreChoicesCompareMoreCandidates() {
    EndpointLoad[] loads = loads(5);
    busy(loads[0], 3);
    busy(loads[1], 2);
    busy(loads[2], 1);
    ScriptedRandom random =
        new ScriptedRandom()
            .then(ScriptedRandom.column(0, 5))
            .then(ScriptedRandom.column(1, 5))
            .then(ScriptedRandom.column(2, 5));

    assertThat(picker(new int[] {1, 1, 1, 1, 1}, loads, 3, random).choose()).isEqualTo(2);
  }

  @Test
  void withNoMoreEndpointsThanChoicesEveryEndpointIsCompared() {
    EndpointLoad[] loads = loads(3);
    busy(loads[0], 2);
    busy(loads[1], 1);
    busy(loads[2], 3);
    // One draw: the scan's starting point.
    ScriptedRandom random = new ScriptedRandom().then(ScriptedRandom.column(2, 3));

    assertThat(picker(new int[] {1, 1, 1}, loads, 3, random).choose()).isEqualTo(1);
    assertThat(random.exhausted()).isTrue();
  }

  @Test
  void aFailingEndpointLosesAgainstAnEquallyLoadedHealthyOne() {
    EndpointLoad[] loads = loads(3);
    long start = ticker.read();
    loads[0].callStarted();
    ticker.advance(Duration.ofSeconds(1));
    loads[0].callEnded(start, Status.Code.UNAVAILABLE);
    ScriptedRandom random =
        new ScriptedRandom().then(ScriptedRandom.column(0, 3)).then(ScriptedRandom.column(1, 3));

    assertThat(picker(new int[] {1, 1, 1}, loads, 2, random).choose()).isEqualTo(1);
  }

  /** Loads with {@code errorPenalty} 2, endpoint 0 of which has a success ratio of exactly 0.5. */
  private EndpointLoad[] loadsWithHalfFailingFirst(int n) {
    WeightedPolicyConfig config = WeightedPolicyConfig.builder().errorPenalty(2).build();
    EndpointLoad[] loads = new EndpointLoad[n];
    for (int i = 0; i < n; i++) {
      loads[i] = new EndpointLoad(ticker, config, TracerDecorator.NONE);
    }
    long start = ticker.read();
    loads[0].callStarted();
    ticker.advance(Duration.ofNanos(Math.round(Math.log(2) * 1e9))); // 1 - e^-ln2 = 0.5
    loads[0].callEnded(start, Status.Code.UNAVAILABLE);
    assertThat(loads[0].successRatio()).isCloseTo(0.5, within(1e-9));
    return loads;
  }

  @Test
  void aLargeFailingServerLosesToASmallerHealthyOneWithAFreeWorker() {
    EndpointLoad[] loads = loadsWithHalfFailingFirst(3);
    int[] weights = {8, 2, 2};
    busy(loads[1], 1); // (1 + 1) / 2 = 1: its last free worker
    // endpoint 0, idle: 1 / 8 + 2 × (1 - 0.5) = 1.125. As a multiplier (1 / 8 × 0.5^-2 = 0.5)
    // the failure ratio would not have outweighed the size.
    long[] table = AliasTable.of(weights);
    ScriptedRandom random = new ScriptedRandom().then(bitsFor(table, 0)).then(bitsFor(table, 1));

    assertThat(picker(weights, loads, 2, random).choose()).isEqualTo(1);
  }

  @Test
  void aFailingServerTakesCallsWhenTheOtherCandidatesQueueIsLongerThanItsErrorCost() {
    EndpointLoad[] loads = loadsWithHalfFailingFirst(3);
    int[] weights = {8, 2, 2};
    busy(loads[1], 2); // (2 + 1) / 2 = 1.5 > 1.125
    long[] table = AliasTable.of(weights);
    ScriptedRandom random = new ScriptedRandom().then(bitsFor(table, 1)).then(bitsFor(table, 0));

    assertThat(picker(weights, loads, 2, random).choose()).isEqualTo(0);
  }

  @Test
  void aServerFailingEveryCallIsStillPickedOverAQueueLongerThanTheErrorPenalty() {
    EndpointLoad[] loads = loadsWithHalfFailingFirst(2);
    for (int i = 0; i < 20; i++) {
      long start = ticker.read();
      loads[0].callStarted();
      ticker.advance(Duration.ofSeconds(5));
      loads[0].callEnded(start, Status.Code.UNAVAILABLE);
    }
    // endpoint 0: 1 / 1 + 2 × (1 - ~0) = 3
    busy(loads[1], 1); // (1 + 1) / 1 = 2
    ScriptedRandom random = new ScriptedRandom().then(ScriptedRandom.column(0, 2));
    assertThat(picker(new int[] {1, 1}, loads, 2, random).choose()).isEqualTo(1);

    busy(loads[1], 2); // (3 + 1) / 1 = 4
    random = new ScriptedRandom().then(ScriptedRandom.column(0, 2));
    assertThat(picker(new int[] {1, 1}, loads, 2, random).choose()).isEqualTo(0);
  }

  @Test
  void latencyTermPrefersTheFasterEndpointAtEqualLoad() {
    EndpointLoad[] loads = loads(3);
    sample(loads[0], Duration.ofMillis(40));
    sample(loads[1], Duration.ofMillis(10));
    ScriptedRandom random =
        new ScriptedRandom().then(ScriptedRandom.column(0, 3)).then(ScriptedRandom.column(1, 3));
    LeastRequestPicker picker =
        new LeastRequestPicker(childPickers(3), new int[] {1, 1, 1}, loads, 2, true, random);

    assertThat(picker.choose()).isEqualTo(1);
  }

  @Test
  void latencyTermIsLeftOutWhenACandidateHasNoSample() {
    EndpointLoad[] loads = loads(3);
    sample(loads[0], Duration.ofMillis(1));
    busy(loads[0], 1); // (1 + 1) vs endpoint 2's (0 + 1): load alone decides
    ScriptedRandom random =
        new ScriptedRandom().then(ScriptedRandom.column(0, 3)).then(ScriptedRandom.column(2, 3));
    LeastRequestPicker picker =
        new LeastRequestPicker(childPickers(3), new int[] {1, 1, 1}, loads, 2, true, random);

    assertThat(picker.choose()).isEqualTo(2);
  }

  @Test
  void latencyTermOffIgnoresLatency() {
    EndpointLoad[] loads = loads(3);
    sample(loads[0], Duration.ofMillis(40));
    sample(loads[1], Duration.ofMillis(10));
    ScriptedRandom random =
        new ScriptedRandom().then(ScriptedRandom.column(0, 3)).then(ScriptedRandom.column(1, 3));

    assertThat(picker(new int[] {1, 1, 1}, loads, 2, random).choose()).isEqualTo(0);
  }

  @Test
  void idleEndpointsAreDrawnByWeightAndTheHeavierOfEachPairWins() {
    EndpointLoad[] loads = loads(3);
    int[] weights = {1, 2, 5};
    LeastRequestPicker picker = picker(weights, loads, 2, new Random(11));
    long[] counts = new long[3];
    int picks = 200_000;
    for (int i = 0; i < picks; i++) {
      counts[picker.choose()]++;
    }

    // Distinct pairs drawn by weight; with nothing outstanding the larger weight always wins.
    // P(1) = P(pair {0,1}) = (1/8)(2/7) + (2/8)(1/6); P(2) = the rest. Endpoint 0 wins only when
    // the bounded redraws all repeat it: (1/8)^6, about 4e-6 per pick.
    double p1 = (1 / 8.0) * (2 / 7.0) + (2 / 8.0) * (1 / 6.0);
    assertThat(counts[0]).isLessThan(10);
    assertThat(counts[1] / (double) picks).isCloseTo(p1, within(0.005));
  }

  @Test
  void picksReturnAPrecomputedResultCarryingTheEndpointsTracerFactory() {
    EndpointLoad[] loads = loads(2);
    LeastRequestPicker picker = picker(new int[] {1, 1}, loads, 2, new Random(3));

    PickResult first = picker.pickSubchannel(null);
    PickResult again = first;
    for (int i = 0; i < 20 && again == first; i++) {
      again = picker.pickSubchannel(null);
    }

    int index = indexOf(first);
    assertThat(first.getStreamTracerFactory()).isSameAs(loads[index].tracerFactory());
    assertThat(picker.pickSubchannel(null)).satisfiesAnyOf(
        r -> assertThat(r).isSameAs(first), r -> assertThat(indexOf(r)).isNotEqualTo(index));
  }

  @Test
  void pickersOverTheSameEndpointsAndSettingsAreEqual() {
    EndpointLoad[] loads = loads(2);
    var a = new LeastRequestPicker(childPickers(2), new int[] {1, 2}, loads, 2, false, null);
    var sameChildren = a.childPickers;
    var b = new LeastRequestPicker(sameChildren, new int[] {1, 2}, loads, 2, false, null);
    var otherChoice = new LeastRequestPicker(sameChildren, new int[] {1, 2}, loads, 3, false, null);
    var otherLatency = new LeastRequestPicker(sameChildren, new int[] {1, 2}, loads, 2, true, null);
    var otherLoads = new LeastRequestPicker(sameChildren, new int[] {1, 2}, loads(2), 2, false, null);

    assertThat(a).isEqualTo(b).hasSameHashCodeAs(b);
    assertThat(a).isNotEqualTo(otherChoice).isNotEqualTo(otherLatency).isNotEqualTo(otherLoads);
  }

  /**
   * The pick computes each score once and selects without branches; this holds it to the rule
   * as written (draw by weight, redraw a repeat of the best up to {@value
   * LeastRequestPicker#MAX_REDRAWS} times, keep the strictly lower score) on the same random
   * numbers, over loads with calls outstanding, utilization penalties and error costs, for
   * uniform and skewed weights, one endpoint holding most of the weight among them.
   */
  @Test
  void everyPickIsTheOneTheRuleAsWrittenMakes() {
    Random setup = new Random(7);
    for (int round = 0; round < 40; round++) {
      int n = 4 + setup.nextInt(60);
      int[] weights = new int[n];
      EndpointLoad[] loads = loads(n);
      for (int i = 0; i < n; i++) {
        weights[i] = round % 2 == 0 ? 1 + setup.nextInt(10) : 1 + setup.nextInt(1_000_000);
        busy(loads[i], setup.nextInt(4));
        if (setup.nextInt(4) == 0) {
          loads[i].reportUtilization(setup.nextDouble());
        }
        if (setup.nextInt(4) == 0) {
          long start = ticker.read();
          loads[i].callStarted();
          ticker.advance(Duration.ofMillis(1 + setup.nextInt(2000)));
          loads[i].callEnded(start, Status.Code.UNAVAILABLE);
        }
      }
      if (round % 5 == 0) {
        weights[0] = 100 * n * 10; // one endpoint holds most of the weight: many redraws
      }
      int choices = 2 + round % 3;
      long seed = setup.nextLong();
      LeastRequestPicker picker = picker(weights, loads, choices, new Random(seed));
      Random reference = new Random(seed);
      long[] table = AliasTable.of(weights);
      for (int pick = 0; pick < 2_000; pick++) {
        assertThat(picker.choose())
            .as("round %s, pick %s", round, pick)
            .isEqualTo(chooseAsWritten(table, weights, loads, choices, reference));
      }
    }
  }

  /** The rule of {@link LeastRequestPicker}'s class comment, without the latency term. */
  private static int chooseAsWritten(
      long[] table, int[] weights, EndpointLoad[] loads, int choices, Random random) {
    int best = AliasTable.sample(table, random.nextLong());
    for (int k = 1; k < choices; k++) {
      int candidate = AliasTable.sample(table, random.nextLong());
      for (int redraw = 0; candidate == best && redraw < LeastRequestPicker.MAX_REDRAWS; redraw++) {
        candidate = AliasTable.sample(table, random.nextLong());
      }
      if (candidate != best && score(loads[candidate], weights[candidate])
          < score(loads[best], weights[best])) {
        best = candidate;
      }
    }
    return best;
  }

  private static double score(EndpointLoad load, int weight) {
    return (load.outstanding() + 1) * load.penalty() * (1.0 / weight) + load.errorCost();
  }

  private void sample(EndpointLoad load, Duration latency) {
    long start = ticker.read();
    load.callStarted();
    ticker.advance(latency);
    load.callEnded(start, Status.Code.OK);
  }

  /** Random bits whose alias draw from {@code table} lands on endpoint {@code target}. */
  private static long bitsFor(long[] table, int target) {
    Random search = new Random(target);
    for (int i = 0; i < 10_000; i++) {
      long r = search.nextLong();
      if (AliasTable.sample(table, r) == target) {
        return r;
      }
    }
    throw new AssertionError("no bits found for endpoint " + target);
  }
}
