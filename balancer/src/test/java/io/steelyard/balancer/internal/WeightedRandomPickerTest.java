package io.steelyard.balancer.internal;

import io.steelyard.balancer.spi.AliasTable;

import static io.steelyard.balancer.internal.TestPickers.childPickers;
import static io.steelyard.balancer.internal.TestPickers.indexOf;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import io.grpc.LoadBalancer.SubchannelPicker;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

class WeightedRandomPickerTest {

  private static long[] countPicks(WeightedRandomPicker picker, int n, int picks) {
    long[] counts = new long[n];
    for (int i = 0; i < picks; i++) {
      counts[indexOf(picker.pickSubchannel(null))]++;
    }
    return counts;
  }

  @Test
  void aliasTableEncodesEachWeightShareExactly() {
    Random random = new Random(1);
    for (int vector = 0; vector < 500; vector++) {
      int n = 1 + random.nextInt(200);
      int[] weights = new int[n];
      long total = 0;
      for (int i = 0; i < n; i++) {
        weights[i] = 1 + random.nextInt(vector % 2 == 0 ? 10 : 1_000_000);
        total += weights[i];
      }

      long[] table = AliasTable.of(weights);

      double[] probability = new double[n];
      for (int column = 0; column < n; column++) {
        double keep = (int) (table[column] >>> 32) / 0x1p31;
        probability[column] += keep / n;
        probability[(int) table[column]] += (1 - keep) / n;
      }
      for (int i = 0; i < n; i++) {
        assertThat(probability[i]).isCloseTo(weights[i] / (double) total, within(2e-9));
      }
    }
  }

  @Test
  void thirtyTwoBitDrawsFromTablesLaidEndToEndLandByEachShare() {
    long[] first = AliasTable.of(new long[] {1, 2, 5, 0});
    long[] second = AliasTable.of(new long[] {0, 3, 0, 1});
    long[] tables = new long[8];
    System.arraycopy(first, 0, tables, 0, 4);
    System.arraycopy(second, 0, tables, 4, 4);
    Random random = new Random(20261206);
    int draws = 1_000_000;
    long[] fromFirst = new long[4];
    long[] fromSecond = new long[4];

    for (int i = 0; i < draws; i++) {
      long r = random.nextLong();
      fromFirst[AliasTable.sample(tables, 0, 4, (int) (r >>> 32))]++;
      fromSecond[AliasTable.sample(tables, 4, 4, (int) r)]++;
    }

    double[] firstShares = {1 / 8.0, 2 / 8.0, 5 / 8.0, 0};
    double[] secondShares = {0, 3 / 4.0, 0, 1 / 4.0};
    for (int i = 0; i < 4; i++) {
      assertThat(fromFirst[i] / (double) draws).as("first table, index %s", i)
          .isCloseTo(firstShares[i], within(0.003));
      assertThat(fromSecond[i] / (double) draws).as("second table, index %s", i)
          .isCloseTo(secondShares[i], within(0.003));
    }
    assertThat(fromFirst[3]).as("weight 0 is never drawn").isZero();
    assertThat(fromSecond[0] + fromSecond[2]).as("weight 0 is never drawn").isZero();
  }

  @Test
  void aColumnWhoseShareRoundsToWholeIsKeptAsAFullOne() {
    // Column 0 holds 1 - 2^-40 of a column: its threshold rounds to 2^31, which is no int.
    long[] table = AliasTable.of(new long[] {(1L << 40) - 1, (1L << 40) + 1});

    assertThat((int) (table[0] >>> 32)).isEqualTo(Integer.MAX_VALUE);
    assertThat(AliasTable.sample(table, (long) Integer.MAX_VALUE - 1)).isZero();
  }

  @Test
  void millionPicksLandWithinHalfAPointOfEachShare() {
    int[] weights = {1, 2, 5};
    WeightedRandomPicker picker =
        new WeightedRandomPicker(childPickers(3), weights, new Random(20261129));
    int picks = 1_000_000;

    long[] counts = countPicks(picker, 3, picks);

    for (int i = 0; i < 3; i++) {
      assertThat(100.0 * counts[i] / picks)
          .as("share of endpoint %s", i)
          .isCloseTo(100.0 * weights[i] / 8, within(0.5));
    }
  }

  @Test
  void skewedWeightsKeepTheirShares() {
    int[] weights = {1, 1_000_000, 999, 500_000};
    WeightedRandomPicker picker = new WeightedRandomPicker(childPickers(4), weights, new Random(3));
    int picks = 1_000_000;
    double total = 1 + 1_000_000 + 999 + 500_000;

    long[] counts = countPicks(picker, 4, picks);

    for (int i = 0; i < 4; i++) {
      assertThat(100.0 * counts[i] / picks).isCloseTo(100.0 * weights[i] / total, within(0.5));
    }
  }

  /**
   * For each of 300 random weight vectors, Pearson's statistic of 20,000 picks against the
   * weights. Under a correct sampler each is chi-square with n-1 degrees of freedom, so: about
   * 1% may exceed the 99th percentile (we allow up to 3%), and their sum must sit within 4
   * standard deviations of its mean (sum of dof, variance 2 * sum of dof).
   */
  @Test
  void chiSquareOverManyRandomWeightVectorsShowsNoBias() {
    Random vectors = new Random(99);
    Random picks = new Random(100);
    int trials = 300;
    int picksPerTrial = 20_000;
    int exceeded = 0;
    double sumStatistic = 0;
    long sumDof = 0;
    for (int t = 0; t < trials; t++) {
      int n = 2 + vectors.nextInt(30);
      int[] weights = new int[n];
      double total = 0;
      for (int i = 0; i < n; i++) {
        weights[i] = 1 + vectors.nextInt(t % 2 == 0 ? 10 : 1000);
        total += weights[i];
      }
      WeightedRandomPicker picker = new WeightedRandomPicker(childPickers(n), weights, picks);
      long[] counts = countPicks(picker, n, picksPerTrial);
      double statistic = 0;
      for (int i = 0; i < n; i++) {
        double expected = picksPerTrial * weights[i] / total;
        statistic += (counts[i] - expected) * (counts[i] - expected) / expected;
      }
      int dof = n - 1;
      if (statistic > chiSquare99thPercentile(dof)) {
        exceeded++;
      }
      sumStatistic += statistic;
      sumDof += dof;
    }

    assertThat(exceeded).isLessThanOrEqualTo(trials * 3 / 100);
    assertThat(sumStatistic).isCloseTo((double) sumDof, within(4 * Math.sqrt(2.0 * sumDof)));
  }

  /** Wilson–Hilferty approximation, z(0.99) = 2.326. */
  private static double chiSquare99thPercentile(int dof) {
    double a = 2.0 / (9 * dof);
    double cube = 1 - a + 2.326 * Math.sqrt(a);
    return dof * cube * cube * cube;
  }

  @Test
  void singleEndpointIsAlwaysPicked() {
    WeightedRandomPicker picker = new WeightedRandomPicker(childPickers(1), new int[] {7}, new Random(5));

    assertThat(countPicks(picker, 1, 1000)).containsExactly(1000);
  }

  @Test
  void productionThreadLocalRandomReachesEveryPartOfALargeTable() {
    WeightedRandomPicker picker = new WeightedRandomPicker(childPickers(10_000), uniform(10_000, 3));

    long[] counts = countPicks(picker, 10_000, 200_000);

    // 20 expected picks each: an endpoint left out has probability e^-20 (2e-9) per endpoint.
    assertThat(Arrays.stream(counts).filter(c -> c == 0).count()).isZero();
    assertThat(Arrays.stream(counts).sum()).isEqualTo(200_000);
  }

  @Test
  void pickersWithSameChildrenAndWeightsAreEqual() {
    SubchannelPicker[] children = childPickers(3);

    WeightedRandomPicker a = new WeightedRandomPicker(children, new int[] {1, 2, 3});
    WeightedRandomPicker b = new WeightedRandomPicker(children, new int[] {1, 2, 3});
    WeightedRandomPicker c = new WeightedRandomPicker(children, new int[] {1, 2, 4});

    assertThat(a).isEqualTo(b).hasSameHashCodeAs(b).isNotEqualTo(c);
  }

  @Test
  void rejectsNonPositiveWeights() {
    assertThatThrownBy(() -> new WeightedRandomPicker(childPickers(2), new int[] {1, 0}))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("weight: 0");
  }

  private static int[] uniform(int n, int weight) {
    int[] weights = new int[n];
    Arrays.fill(weights, weight);
    return weights;
  }
}
