package io.steelyard.balancer.internal;

import static io.steelyard.balancer.internal.TestPickers.childPickers;
import static io.steelyard.balancer.internal.TestPickers.indexOf;
import static org.assertj.core.api.Assertions.assertThat;

import io.steelyard.balancer.spi.PickerFactory;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class SmoothRoundRobinPickerTest {

  private static int[] randomWeights(Random random, int n, int max) {
    int[] weights = new int[n];
    for (int i = 0; i < n; i++) {
      weights[i] = 1 + random.nextInt(max);
    }
    return weights;
  }

  @Test
  void weightsOneTwoFiveInterleaveSmoothly() {
    assertThat(SmoothRoundRobinPicker.buildSchedule(new int[] {1, 2, 5}))
        .containsExactly(2, 1, 2, 0, 2, 2, 1, 2);
  }

  @Test
  void commonFactorIsDividedOut() {
    assertThat(SmoothRoundRobinPicker.periodWeights(new int[] {2, 4, 10})).containsExactly(1, 2, 5);
  }

  @Test
  void equalWeightsCycleInEndpointOrder() {
    assertThat(SmoothRoundRobinPicker.buildSchedule(new int[] {3, 3, 3, 3}))
        .containsExactly(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3);
  }

  @Test
  void everyPeriodHoldsEachEndpointExactlyItsWeight() {
    Random random = new Random(11);
    for (int vector = 0; vector < 300; vector++) {
      int[] weights = randomWeights(random, 1 + random.nextInt(50), 1 + random.nextInt(100));
      int[] schedule = SmoothRoundRobinPicker.buildSchedule(weights);

      int[] counts = new int[weights.length];
      for (int endpoint : schedule) {
        counts[endpoint]++;
      }

      assertThat(counts).containsExactly(weights);
    }
  }

  /**
   * The schedule is every slot {@code (i, j)} ordered by its ideal time {@code (j + 1/2) / w[i]},
   * ties by endpoint: here computed the obvious way, by sorting all slots with that comparator,
   * for weights with many equal times (small integers), few (large ones), and equal weights.
   */
  @Test
  void theScheduleIsEverySlotSortedByItsIdealTime() {
    Random random = new Random(13);
    for (int vector = 0; vector < 200; vector++) {
      int max = vector % 4 == 0 ? 1 : vector % 4 == 1 ? 10 : vector % 4 == 2 ? 1_000 : 60_000;
      int n = 1 + random.nextInt(vector % 5 == 0 ? 2_000 : 60);
      int[] weights = randomWeights(random, n, max);
      long period = Arrays.stream(weights).asLongStream().sum();
      if (period > 20_000) {
        continue;
      }

      assertThat(SmoothRoundRobinPicker.buildSchedule(weights))
          .as("weights %s", weights.length <= 20 ? Arrays.toString(weights) : n + " endpoints")
          .containsExactly(sortedSlots(weights));
    }
  }

  /**
   * The same order for the vectors that take each way through the build: endpoints grouped by
   * weight whose shared times are merged by concatenation, by insertion and by bit set, and
   * endpoints left one per class when the heaviest holds most of the period.
   */
  @Test
  void largeVectorsAreEverySlotSortedByItsIdealTime() {
    Random random = new Random(17);
    int[] skewed = new int[10_000];
    for (int i = 0; i < skewed.length; i++) {
      skewed[i] = (int) Math.max(1, Math.round(Math.pow(10, 6 * random.nextDouble())));
    }
    int[] heavyAmongOnes = new int[10_000];
    Arrays.fill(heavyAmongOnes, 1);
    heavyAmongOnes[4_321] = 1_000_000_000;
    int[] fewInterleaved = {1, 3, 1, 3, 3, 1, 9, 1, 3};
    int[] inBlocks = {1, 1, 1, 1, 3, 3, 3, 3, 5, 5}; // 1, 3 and 5 share 1/2, endpoints in blocks
    int[][] vectors = {
      randomWeights(random, 10_000, 10), // weights 1..10: 55 times for 55,000 slots
      SmoothRoundRobinPicker.periodWeights(skewed),
      SmoothRoundRobinPicker.periodWeights(heavyAmongOnes),
      randomWeights(random, 5_000, 3), // 1 and 3 share 1/2, their endpoints interleaved
      fewInterleaved, // 1, 3 and 9 share 1/2 (and 3 and 9 share 1/6, 5/6) with few endpoints
      inBlocks,
      IntStream.rangeClosed(1, 300).toArray(), // distinct weights
    };
    for (int v = 0; v < vectors.length; v++) {
      assertThat(SmoothRoundRobinPicker.buildSchedule(vectors[v]))
          .as("vector %s (%s endpoints)", v, vectors[v].length)
          .containsExactly(sortedSlots(vectors[v]));
    }
  }

  private static int[] sortedSlots(int[] weights) {
    int period = Arrays.stream(weights).sum();
    long[][] slots = new long[period][]; // {endpoint, ordinal}
    int p = 0;
    for (int i = 0; i < weights.length; i++) {
      for (int j = 0; j < weights[i]; j++) {
        slots[p++] = new long[] {i, j};
      }
    }
    // (2a + 1) / (2 w[x]) against (2b + 1) / (2 w[y]), cross-multiplied: exact.
    Arrays.sort(slots, (x, y) -> {
      int byTime = Long.compare(
          (2 * x[1] + 1) * weights[(int) y[0]], (2 * y[1] + 1) * weights[(int) x[0]]);
      return byTime != 0 ? byTime : Long.compare(x[0], y[0]);
    });
    int[] schedule = new int[period];
    for (int k = 0; k < period; k++) {
      schedule[k] = (int) slots[k][0];
    }
    return schedule;
  }

  /** |c_i(k) - k * s_i| <= 1/2 + (n - 2) * s_i / 2 for every prefix k, as documented. */
  @Test
  void everyPrefixStaysWithinTheDocumentedLag() {
    Random random = new Random(12);
    for (int vector = 0; vector < 300; vector++) {
      int n = 2 + random.nextInt(40);
      int[] weights = randomWeights(random, n, vector % 3 == 0 ? 5 : 200);
      int[] schedule = SmoothRoundRobinPicker.buildSchedule(weights);
      double total = Arrays.stream(weights).sum();
      long[] counts = new long[n];

      double worstExcess = Double.NEGATIVE_INFINITY;
      String worst = "";
      for (int k = 1; k <= schedule.length; k++) {
        counts[schedule[k - 1]]++;
        for (int i = 0; i < n; i++) {
          double share = weights[i] / total;
          double excess = Math.abs(counts[i] - k * share) - (0.5 + (n - 2) * share / 2);
          if (excess > worstExcess) {
            worstExcess = excess;
            worst = "endpoint " + i + " at prefix " + k;
          }
        }
      }
      assertThat(worstExcess).as("weights %s, %s", Arrays.toString(weights), worst).isLessThanOrEqualTo(1e-9);
    }
  }

  /** No endpoint runs more than 1 + floor(w_i / w_max_other) picks in a row, across periods. */
  @Test
  void noEndpointRunsLongerThanTheDocumentedBound() {
    Random random = new Random(13);
    for (int vector = 0; vector < 300; vector++) {
      int n = 2 + random.nextInt(30);
      int[] weights = randomWeights(random, n, vector % 2 == 0 ? 10 : 1000);
      int[] schedule = SmoothRoundRobinPicker.buildSchedule(weights);

      int run = 0;
      int previous = -1;
      for (int k = 0; k < 2 * schedule.length; k++) {
        int endpoint = schedule[k % schedule.length];
        run = endpoint == previous ? run + 1 : 1;
        previous = endpoint;
        int maxOther = 0;
        for (int i = 0; i < n; i++) {
          if (i != endpoint) {
            maxOther = Math.max(maxOther, weights[i]);
          }
        }
        if (run > 1 + weights[endpoint] / maxOther) {
          assertThat(run)
              .as("weights %s, endpoint %s", Arrays.toString(weights), endpoint)
              .isLessThanOrEqualTo(1 + weights[endpoint] / maxOther);
        }
      }
    }
  }

  @Test
  void hugeWeightsAreRescaledToABoundedPeriodKeepingShares() {
    Random random = new Random(14);
    int n = 100;
    int[] weights = new int[n];
    double total = 0;
    for (int i = 0; i < n; i++) {
      weights[i] = 10_000 + random.nextInt(990_001);
      total += weights[i];
    }

    SmoothRoundRobinPicker picker =
        new SmoothRoundRobinPicker(childPickers(n), weights, positionsAt(0, 0));
    int[] schedule = picker.schedule();

    assertThat(schedule.length).isBetween(SmoothRoundRobinPicker.MAX_PERIOD - n, SmoothRoundRobinPicker.MAX_PERIOD + n);
    int[] counts = new int[n];
    for (int endpoint : schedule) {
      counts[endpoint]++;
    }
    for (int i = 0; i < n; i++) {
      assertThat(counts[i] / (double) schedule.length)
          .isCloseTo(weights[i] / total, org.assertj.core.data.Offset.offset(1.0 / schedule.length));
    }
  }

  @Test
  void tinyWeightNextToHugeOnesKeepsAtLeastOneSlot() {
    int[] reduced = SmoothRoundRobinPicker.periodWeights(new int[] {1_000_000, 1, 1_000_000});

    assertThat(reduced[1]).isEqualTo(1);
    assertThat(reduced[0] + reduced[1] + reduced[2]).isLessThanOrEqualTo(SmoothRoundRobinPicker.MAX_PERIOD + 1);
  }

  private static StripedPositions positionsAt(int... initial) {
    return new StripedPositions(initial);
  }

  @Test
  void eachStripeWalksTheScheduleFromItsOwnPosition() {
    SmoothRoundRobinPicker picker =
        new SmoothRoundRobinPicker(childPickers(3), new int[] {1, 2, 5}, positionsAt(3, 0));

    int[] stripe0 = new int[8];
    int[] stripe1 = new int[8];
    for (int i = 0; i < 8; i++) {
      stripe0[i] = picker.pickOnStripe(0);
      stripe1[i] = picker.pickOnStripe(1);
    }

    // The schedule is 2 1 2 0 2 2 1 2; stripe 0 starts at slot 3, stripe 1 at slot 0.
    assertThat(stripe0).containsExactly(0, 2, 2, 1, 2, 2, 1, 2);
    assertThat(stripe1).containsExactly(2, 1, 2, 0, 2, 2, 1, 2);
  }

  @Test
  void aThreadPicksTheExactSequenceOfItsStripe() {
    StripedPositions positions = positionsAt(5, 5, 5, 5);
    SmoothRoundRobinPicker picker =
        new SmoothRoundRobinPicker(childPickers(3), new int[] {1, 2, 5}, positions);

    int[] picked = new int[8];
    for (int i = 0; i < 8; i++) {
      picked[i] = indexOf(picker.pickSubchannel(null));
    }

    assertThat(picked).containsExactly(2, 1, 2, 2, 1, 2, 0, 2);
    // Eight picks are one whole period of 8: the stripe is back at slot 5.
    assertThat(positions.next(positions.stripeOf(Thread.currentThread()), 8)).isEqualTo(5);
  }

  @Test
  void successivePickersContinueEachStripeWhereTheLastOneLeftIt() {
    PickerFactory factory = SmoothRoundRobinPicker.newFactory(positionsAt(0, 0));
    SmoothRoundRobinPicker first =
        (SmoothRoundRobinPicker) factory.newPicker(childPickers(2), new int[] {1, 1});
    first.pickOnStripe(1);

    SmoothRoundRobinPicker second =
        (SmoothRoundRobinPicker) factory.newPicker(childPickers(2), new int[] {1, 1});

    assertThat(second.pickOnStripe(1)).isEqualTo(1);
    assertThat(second.pickOnStripe(0)).isEqualTo(0);
  }

  /**
   * Any window of k consecutive picks of one stripe: |c_i - k * s_i| <= 1 + (n - 2) * s_i. With
   * D_i(x) = c_i(x) - x * s_i over the periodic schedule, the worst window is max D_i - min D_i.
   */
  @Test
  void everyWindowOfOneStripeStaysWithinTwiceThePrefixLag() {
    Random random = new Random(15);
    for (int vector = 0; vector < 300; vector++) {
      int n = 2 + random.nextInt(40);
      int[] weights = randomWeights(random, n, vector % 3 == 0 ? 5 : 200);
      int[] schedule = SmoothRoundRobinPicker.buildSchedule(weights);
      double total = Arrays.stream(weights).sum();
      for (int i = 0; i < n; i++) {
        double share = weights[i] / total;
        double lag = 0;
        double max = 0;
        double min = 0;
        for (int endpoint : schedule) {
          lag += (endpoint == i ? 1 : 0) - share;
          max = Math.max(max, lag);
          min = Math.min(min, lag);
        }
        assertThat(max - min)
            .as("weights %s, endpoint %s", Arrays.toString(weights), i)
            .isLessThanOrEqualTo(1 + (n - 2) * share + 1e-9);
      }
    }
  }

  /**
   * Four stripes from random positions, picked in a seeded random interleaving: after every pick,
   * |c_i - K * s_i| <= m * (1 + (n - 2) * s_i) with m the stripes used so far; and once every
   * stripe has served whole periods, the counts are exact.
   */
  @Test
  void stripesTogetherKeepProportionsWithinTheStatedBoundUnderAnyInterleaving() {
    Random random = new Random(16);
    int stripes = 4;
    for (int vector = 0; vector < 200; vector++) {
      int n = 1 + random.nextInt(20);
      int[] weights = randomWeights(random, n, vector % 2 == 0 ? 6 : 60);
      int[] initial = new int[stripes];
      for (int s = 0; s < stripes; s++) {
        initial[s] = random.nextInt(1 << 20);
      }
      SmoothRoundRobinPicker picker =
          new SmoothRoundRobinPicker(childPickers(n), weights, positionsAt(initial));
      int period = picker.schedule().length;
      double total = Arrays.stream(weights).sum();
      long[] counts = new long[n];
      long[] perStripe = new long[stripes];
      int used = 0;
      int picks = 3 * period + random.nextInt(period + 1);
      int k = 0;
      while (k < picks) {
        // Bursts on one stripe, so that stripes run ahead of each other as real threads do.
        int s = random.nextInt(stripes);
        int burst = Math.min(picks - k, 1 + random.nextInt(period));
        if (perStripe[s] == 0) {
          used++;
        }
        for (int b = 0; b < burst; b++) {
          counts[picker.pickOnStripe(s)]++;
          perStripe[s]++;
          k++;
          for (int i = 0; i < n; i++) {
            double share = weights[i] / total;
            double bound = used * (1 + (n - 2) * share);
            if (Math.abs(counts[i] - k * share) > bound + 1e-9) {
              assertThat(Math.abs(counts[i] - k * share))
                  .as("weights %s, endpoint %s, after %s picks", Arrays.toString(weights), i, k)
                  .isLessThanOrEqualTo(bound);
            }
          }
        }
      }
      // Top every stripe up to whole periods: then the proportions are exact.
      long all = picks;
      for (int s = 0; s < stripes; s++) {
        while (perStripe[s] % period != 0) {
          counts[picker.pickOnStripe(s)]++;
          perStripe[s]++;
          all++;
        }
      }
      for (int i = 0; i < n; i++) {
        assertThat(counts[i] * total).isEqualTo(all * (double) weights[i]);
      }
    }
  }

  @Test
  void aThreadAlwaysUsesOneStripeAndConsecutiveThreadIdsUseDistinctStripes() {
    StripedPositions positions = positionsAt(0, 0, 0, 0);
    Thread current = Thread.currentThread();

    assertThat(positions.stripeOf(current)).isEqualTo(positions.stripeOf(current));
    // A pool creates its threads one after another, so their ids are (mostly) consecutive.
    assertThat(
            java.util.stream.LongStream.range(1_000, 1_004)
                .map(positions::stripeOf)
                .distinct()
                .count())
        .isEqualTo(4);
  }

  @Test
  void defaultStripeCountIsTwiceTheProcessorsAsAPowerOfTwoUpToSixtyFour() {
    assertThat(StripedPositions.defaultStripes(1)).isEqualTo(2);
    assertThat(StripedPositions.defaultStripes(2)).isEqualTo(4);
    assertThat(StripedPositions.defaultStripes(3)).isEqualTo(8);
    assertThat(StripedPositions.defaultStripes(48)).isEqualTo(64);
    assertThat(StripedPositions.defaultStripes(512)).isEqualTo(64);
  }

  @Test
  void threadsOnTheirOwnStripesGiveExactProportions() throws InterruptedException {
    SmoothRoundRobinPicker picker =
        new SmoothRoundRobinPicker(childPickers(3), new int[] {1, 2, 5}, positionsAt(0, 3, 6, 1));
    long[][] counts = new long[2][3];
    int perThread = 80_000;
    Thread[] threads = new Thread[2];
    for (int t = 0; t < threads.length; t++) {
      int stripe = t;
      threads[t] =
          new Thread(
              () -> {
                for (int i = 0; i < perThread; i++) {
                  counts[stripe][picker.pickOnStripe(stripe)]++;
                }
              });
      threads[t].start();
    }
    for (Thread thread : threads) {
      thread.join();
    }

    // Each thread does 10,000 whole periods of 8 on its own stripe.
    for (long[] perStripe : counts) {
      assertThat(perStripe).containsExactly(10_000, 20_000, 50_000);
    }
  }

  @Test
  void threadsSharingOneStripeStillPickOnlyScheduledEndpoints() throws InterruptedException {
    SmoothRoundRobinPicker picker =
        new SmoothRoundRobinPicker(childPickers(3), new int[] {1, 2, 5}, positionsAt(0));
    AtomicLongArray counts = new AtomicLongArray(3);
    int perThread = 80_000;
    Thread[] threads = new Thread[2];
    for (int t = 0; t < threads.length; t++) {
      threads[t] =
          new Thread(
              () -> {
                for (int i = 0; i < perThread; i++) {
                  counts.incrementAndGet(picker.pickOnStripe(0));
                }
              });
      threads[t].start();
    }
    for (Thread thread : threads) {
      thread.join();
    }

    // A collision may repeat a slot, never step outside the schedule: every pick lands on an
    // endpoint (an index past the end would have killed its thread and lost its counts).
    assertThat(counts.get(0) + counts.get(1) + counts.get(2)).isEqualTo(2L * perThread);
    assertThat(counts.get(0)).isPositive();
  }
}
