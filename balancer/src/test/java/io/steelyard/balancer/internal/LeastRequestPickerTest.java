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
import java.util.Arrays;
import java.util.Deque;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The choice among candidates and the score, with scripted draws and fake time. */
class LeastRequestPickerTest {

  private final FakeTicker ticker = new FakeTicker();

  /**
   * Random bits chosen by the test. Above {@link LeastRequestPicker#MAX_TABLED} endpoints, {@link
   * #columns} makes the alias table pick two columns (the first two candidates) and {@link
   * #column} one (a further candidate or a redraw); up to it, {@link Tables} finds the bits.
   */
  static final class ScriptedRandom extends Random {
    private final Deque<Long> values = new ArrayDeque<>();

    ScriptedRandom then(long value) {
      values.add(value);
      return this;
    }

    /**
     * The 32 bits that select column {@code c} of {@code n} and keep it: the smallest {@code h}
     * with {@code h × n >>> 32 == c}, whose coin (what the product leaves, below {@code n}) is
     * below every threshold of equal weights.
     */
    static int half(int c, int n) {
      return (int) ((((long) c << 32) + n - 1) / n);
    }

    /** A long whose high half selects column {@code c} of {@code n}. */
    static long column(int c, int n) {
      return (long) half(c, n) << 32;
    }

    /** A long whose high half selects column {@code a} of {@code n} and whose low half {@code b}. */
    static long columns(int a, int b, int n) {
      return (long) half(a, n) << 32 | (half(b, n) & 0xFFFF_FFFFL);
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

  /**
   * The tables a picker over {@code weights} (at most {@link LeastRequestPicker#MAX_TABLED})
   * draws its candidates from, to find the random bits that draw given candidates.
   */
  static final class Tables {
    final int n;
    final int shift;
    final long[] avoiding;
    final long[] pairs;

    Tables(int[] weights) {
      n = weights.length;
      shift = 32 - Integer.numberOfLeadingZeros(n - 1);
      avoiding = new long[n << shift];
      pairs = new long[n << shift];
      LeastRequestPicker.tableRedraws(weights, shift, avoiding, pairs);
    }

    /** A long whose high half draws {@code first} and {@code second} as the first two candidates. */
    long firstTwo(int first, int second) {
      return (long) bits(pairs, 0, pairs.length, (first << shift) + second) << 32;
    }

    /** {@code firstTwo}'s long with a low half that draws {@code third} avoiding {@code best}. */
    long third(long firstTwo, int best, int third) {
      return firstTwo | (bits(avoiding, best << shift, 1 << shift, third) & 0xFFFF_FFFFL);
    }

    private static int bits(long[] tables, int from, int columns, int target) {
      Random search = new Random(target);
      for (int i = 0; i < 100_000; i++) {
        int r = search.nextInt();
        if (AliasTable.sample(tables, from, columns, r) == target) {
          return r;
        }
      }
      throw new AssertionError("no bits found for " + target);
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
    int[] weights = {1, 1, 1, 1};
    ScriptedRandom random = new ScriptedRandom().then(new Tables(weights).firstTwo(1, 2));

    int chosen = picker(weights, loads, 2, random).choose();

    assertThat(chosen).isEqualTo(2);
    assertThat(random.exhausted()).isTrue();
  }

  @Test
  void loadCountsRelativeToWeight() {
    EndpointLoad[] loads = loads(4);
    busy(loads[0], 2); // weight 4: (2 + 1) / 4 = 0.75
    // endpoint 3, weight 1, idle: (0 + 1) / 1 = 1
    int[] weights = {4, 1, 1, 1};
    Tables tables = new Tables(weights);
    ScriptedRandom random = new ScriptedRandom().then(tables.firstTwo(3, 0));

    assertThat(picker(weights, loads, 2, random).choose()).isEqualTo(0);

    busy(loads[0], 2); // now (4 + 1) / 4 = 1.25 > 1
    random = new ScriptedRandom().then(tables.firstTwo(3, 0));
    assertThat(picker(weights, loads, 2, random).choose()).isEqualTo(3);
  }

  @Test
  void idleLargerServerBeatsIdleSmallerOne() {
    EndpointLoad[] loads = loads(3);
    int[] weights = {1, 8, 1};
    ScriptedRandom random = new ScriptedRandom().then(new Tables(weights).firstTwo(0, 1));

    assertThat(picker(weights, loads, 2, random).choose()).isEqualTo(1);
  }

  @Test
  void tiesGoToTheFirstCandidateDrawn() {
    EndpointLoad[] loads = loads(3);
    int[] weights = {1, 1, 1};
    ScriptedRandom random = new ScriptedRandom().then(new Tables(weights).firstTwo(2, 0));

    assertThat(picker(weights, loads, 2, random).choose()).isEqualTo(2);
  }

  /** Above the tables' bound: draws of the alias table, a repeat of the best drawn again. */
  @Test
  void aSecondDrawOfTheSameEndpointIsRedrawn() {
    int n = LeastRequestPicker.MAX_TABLED + 8;
    EndpointLoad[] loads = loads(n);
    busy(loads[0], 5);
    ScriptedRandom random =
        new ScriptedRandom()
            .then(ScriptedRandom.columns(0, 0, n))
            .then(ScriptedRandom.column(0, n))
            .then(ScriptedRandom.column(1, n));

    assertThat(picker(ones(n), loads, 2, random).choose()).isEqualTo(1);
    assertThat(random.exhausted()).isTrue();
  }

  @Test
  void aThirdDrawOfTheBestIsRedrawnAfterTheLoadsAreRead() {
    int n = LeastRequestPicker.MAX_TABLED + 8;
    EndpointLoad[] loads = loads(n);
    busy(loads[0], 1);
    busy(loads[1], 2);
    busy(loads[2], 5);
    ScriptedRandom random =
        new ScriptedRandom()
            .then(ScriptedRandom.columns(1, 0, n)) // 0 is the best of the two
            .then(ScriptedRandom.column(0, n)) // the third repeats it
            .then(ScriptedRandom.column(3, n)); // its redraw: idle, the best of the three

    assertThat(picker(ones(n), loads, 3, random).choose()).isEqualTo(3);
    assertThat(random.exhausted()).isTrue();
  }

  @Test
  void redrawsAreBoundedSoASkewedTableCannotLoopLong() {
    int n = LeastRequestPicker.MAX_TABLED + 8;
    EndpointLoad[] loads = loads(n);
    ScriptedRandom random = new ScriptedRandom().then(ScriptedRandom.columns(0, 0, n));
    for (int i = 0; i < LeastRequestPicker.MAX_REDRAWS; i++) {
      random.then(ScriptedRandom.column(0, n));
    }

    assertThat(picker(ones(n), loads, 2, random).choose()).isEqualTo(0);
    assertThat(random.exhausted()).isTrue();
  }

  private static int[] ones(int n) {
    int[] weights = new int[n];
    Arrays.fill(weights, 1);
    return weights;
  }

  @Test
  void moreChoicesCompareMoreCandidates() {
    EndpointLoad[] loads = loads(5);
    busy(loads[0], 3);
    busy(loads[1], 2);
    busy(loads[2], 1);
    int[] weights = {1, 1, 1, 1, 1};
    Tables tables = new Tables(weights);
    // 0 and 1 first, 1 the better; then 2, drawn from the table that avoids 1.
    ScriptedRandom random = new ScriptedRandom().then(tables.third(tables.firstTwo(0, 1), 1, 2));

    assertThat(picker(weights, loads, 3, random).choose()).isEqualTo(2);
    assertThat(random.exhausted()).isTrue();
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
    int[] weights = {1, 1, 1};
    ScriptedRandom random = new ScriptedRandom().then(new Tables(weights).firstTwo(0, 1));

    assertThat(picker(weights, loads, 2, random).choose()).isEqualTo(1);
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
    ScriptedRandom random = new ScriptedRandom().then(new Tables(weights).firstTwo(0, 1));

    assertThat(picker(weights, loads, 2, random).choose()).isEqualTo(1);
  }

  @Test
  void aFailingServerTakesCallsWhenTheOtherCandidatesQueueIsLongerThanItsErrorCost() {
    EndpointLoad[] loads = loadsWithHalfFailingFirst(3);
    int[] weights = {8, 2, 2};
    busy(loads[1], 2); // (2 + 1) / 2 = 1.5 > 1.125
    ScriptedRandom random = new ScriptedRandom().then(new Tables(weights).firstTwo(1, 0));

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
    ScriptedRandom random = new ScriptedRandom().then(new Tables(new int[] {1, 1, 1}).firstTwo(0, 1));
    LeastRequestPicker picker =
        new LeastRequestPicker(childPickers(3), new int[] {1, 1, 1}, loads, 2, true, random);

    assertThat(picker.choose()).isEqualTo(1);
  }

  @Test
  void latencyTermIsLeftOutWhenACandidateHasNoSample() {
    EndpointLoad[] loads = loads(3);
    sample(loads[0], Duration.ofMillis(1));
    busy(loads[0], 1); // (1 + 1) vs endpoint 2's (0 + 1): load alone decides
    ScriptedRandom random = new ScriptedRandom().then(new Tables(new int[] {1, 1, 1}).firstTwo(0, 2));
    LeastRequestPicker picker =
        new LeastRequestPicker(childPickers(3), new int[] {1, 1, 1}, loads, 2, true, random);

    assertThat(picker.choose()).isEqualTo(2);
  }

  @Test
  void latencyTermOffIgnoresLatency() {
    EndpointLoad[] loads = loads(3);
    sample(loads[0], Duration.ofMillis(40));
    sample(loads[1], Duration.ofMillis(10));
    ScriptedRandom random = new ScriptedRandom().then(new Tables(new int[] {1, 1, 1}).firstTwo(0, 1));

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
   * Above {@link LeastRequestPicker#MAX_TABLED} endpoints the pick computes each score once and
   * selects without branches; this holds it to the rule as written (draw by weight, redraw a
   * repeat of the best up to {@value LeastRequestPicker#MAX_REDRAWS} times, keep the strictly
   * lower score) on the same random numbers, taken as the picker takes them, over loads with
   * calls outstanding, utilization penalties and error costs, for uniform and skewed weights, one
   * endpoint holding most of the weight among them.
   */
  @Test
  void everyPickIsTheOneTheRuleAsWrittenMakes() {
    Random setup = new Random(7);
    for (int round = 0; round < 40; round++) {
      int n = LeastRequestPicker.MAX_TABLED + 1 + setup.nextInt(60);
      int[] weights = randomWeights(setup, n, round);
      EndpointLoad[] loads = randomLoads(setup, n);
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

  /**
   * Up to {@link LeastRequestPicker#MAX_TABLED} endpoints, every table gives each candidate the
   * probability the redraws would: endpoint {@code c} ends a draw avoiding {@code x} with the
   * probability of drawing {@code x} some number of times (fewer than the redraws allow) and then
   * {@code c}, or {@code x} every time; the pair table gives {@code (a, b)} that of {@code a} and
   * then {@code b} avoiding {@code a}.
   */
  @Test
  void theTablesGiveEachCandidateTheProbabilityTheRedrawsWould() {
    Random setup = new Random(8);
    for (int round = 0; round < 40; round++) {
      int n = 3 + setup.nextInt(LeastRequestPicker.MAX_TABLED - 2);
      int[] weights = randomWeights(setup, n, round);
      Tables tables = new Tables(weights);
      double[] p = shares(weights);
      int stride = 1 << tables.shift;
      for (int x = 0; x < n; x++) {
        double[] avoiding = probabilities(tables.avoiding, x * stride, stride);
        for (int c = 0; c < n; c++) {
          double expected = drawnAvoiding(p, x, c);
          assertThat(avoiding[c]).as("round %s, avoiding %s, endpoint %s", round, x, c)
              .isCloseTo(expected, within(1e-8));
          assertThat(probabilities(tables.pairs, 0, tables.pairs.length)[x * stride + c])
              .as("round %s, pair (%s, %s)", round, x, c)
              .isCloseTo(p[x] * expected, within(1e-8));
        }
        for (int c = n; c < stride; c++) {
          assertThat(avoiding[c]).as("padding column %s", c).isZero();
        }
      }
    }
  }

  /**
   * Up to {@link LeastRequestPicker#MAX_TABLED} endpoints, with three choices, how often each
   * endpoint is picked is what the rule as written gives: the sum over every first, second and
   * third candidate of the probability of drawing them, for the one of them it keeps.
   */
  @Test
  void tabledPicksAreAsFrequentAsTheRuleAsWrittenMakesThem() {
    Random setup = new Random(9);
    for (int round = 0; round < 6; round++) {
      int n = 4 + setup.nextInt(LeastRequestPicker.MAX_TABLED - 3);
      int[] weights = randomWeights(setup, n, round);
      EndpointLoad[] loads = randomLoads(setup, n);
      LeastRequestPicker picker = picker(weights, loads, 3, new Random(setup.nextLong()));
      double[] expected = new double[n];
      double[] p = shares(weights);
      for (int a = 0; a < n; a++) {
        for (int b = 0; b < n; b++) {
          double pair = p[a] * drawnAvoiding(p, a, b);
          int best = score(loads[b], weights[b]) < score(loads[a], weights[a]) ? b : a;
          for (int c = 0; c < n; c++) {
            int kept = score(loads[c], weights[c]) < score(loads[best], weights[best]) ? c : best;
            expected[kept] += pair * drawnAvoiding(p, best, c);
          }
        }
      }
      int picks = 200_000;
      long[] counts = new long[n];
      for (int i = 0; i < picks; i++) {
        counts[picker.choose()]++;
      }
      for (int i = 0; i < n; i++) {
        double sigma = Math.sqrt(expected[i] * (1 - expected[i]) / picks);
        assertThat(counts[i] / (double) picks)
            .as("round %s, endpoint %s of %s", round, i, n)
            .isCloseTo(expected[i], within(5 * sigma + 1e-4));
      }
    }
  }

  /** The chance that a draw avoiding {@code x}, as the redraws make it, ends on {@code c}. */
  private static double drawnAvoiding(double[] p, int x, int c) {
    double allX = 1; // every draw so far was x
    double ends = 0;
    for (int draw = 0; draw <= LeastRequestPicker.MAX_REDRAWS; draw++) {
      if (c != x) {
        ends += allX * p[c];
      }
      allX *= p[x];
    }
    return c == x ? allX : ends;
  }

  private static double[] shares(int[] weights) {
    double total = 0;
    for (int w : weights) {
      total += w;
    }
    double[] p = new double[weights.length];
    for (int i = 0; i < p.length; i++) {
      p[i] = weights[i] / total;
    }
    return p;
  }

  /** Each index's probability in the alias table of {@code columns} entries at {@code from}. */
  private static double[] probabilities(long[] tables, int from, int columns) {
    double[] p = new double[columns];
    for (int column = 0; column < columns; column++) {
      long entry = tables[from + column];
      double keep = (int) (entry >>> 32) / 0x1p31;
      p[column] += keep / columns;
      p[(int) entry] += (1 - keep) / columns;
    }
    return p;
  }

  private static int[] randomWeights(Random setup, int n, int round) {
    int[] weights = new int[n];
    for (int i = 0; i < n; i++) {
      weights[i] = round % 2 == 0 ? 1 + setup.nextInt(10) : 1 + setup.nextInt(1_000_000);
    }
    if (round % 5 == 0) {
      weights[0] = 100 * n * 10; // one endpoint holds most of the weight: many redraws
    }
    return weights;
  }

  private EndpointLoad[] randomLoads(Random setup, int n) {
    EndpointLoad[] loads = loads(n);
    for (int i = 0; i < n; i++) {
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
    return loads;
  }

  /**
   * The rule of {@link LeastRequestPicker}'s class comment without the latency term, above the
   * tables' bound, drawing as the picker draws: the first two candidates from one long's halves,
   * the third's first draw from the next long's high half, then the second's redraws, then the
   * third's; every later draw from a new long's high half.
   */
  private static int chooseAsWritten(
      long[] table, int[] weights, EndpointLoad[] loads, int choices, Random random) {
    int n = table.length;
    long r = random.nextLong();
    int best = AliasTable.sample(table, 0, n, (int) (r >>> 32));
    int second = AliasTable.sample(table, 0, n, (int) r);
    int third = choices > 2 ? AliasTable.sample(table, 0, n, (int) (random.nextLong() >>> 32)) : -1;
    for (int k = 1; k < choices; k++) {
      int candidate =
          k == 1 ? second
              : k == 2 ? third : AliasTable.sample(table, 0, n, (int) (random.nextLong() >>> 32));
      for (int redraw = 0; candidate == best && redraw < LeastRequestPicker.MAX_REDRAWS; redraw++) {
        candidate = AliasTable.sample(table, 0, n, (int) (random.nextLong() >>> 32));
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
}
