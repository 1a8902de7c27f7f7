package io.steelyard.balancer.internal;

import static io.steelyard.balancer.internal.TestPickers.childPickers;
import static io.steelyard.balancer.internal.TestPickers.indexOf;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
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
        new SmoothRoundRobinPicker(childPickers(n), weights, new AtomicLong());
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

  @Test
  void picksFollowTheScheduleFromTheSharedCounter() {
    AtomicLong sequence = new AtomicLong(3);
    SmoothRoundRobinPicker picker =
        new SmoothRoundRobinPicker(childPickers(3), new int[] {1, 2, 5}, sequence);

    int[] picked = new int[8];
    for (int i = 0; i < 8; i++) {
      picked[i] = indexOf(picker.pickSubchannel(null));
    }

    assertThat(picked).containsExactly(0, 2, 2, 1, 2, 2, 1, 2);
    assertThat(sequence.get()).isEqualTo(11);
  }

  @Test
  void concurrentPicksStillGiveExactProportions() throws InterruptedException {
    SmoothRoundRobinPicker picker =
        new SmoothRoundRobinPicker(childPickers(3), new int[] {1, 2, 5}, new AtomicLong());
    AtomicLongArray counts = new AtomicLongArray(3);
    int perThread = 80_000;
    Thread[] threads = new Thread[2];
    for (int t = 0; t < threads.length; t++) {
      threads[t] =
          new Thread(
              () -> {
                for (int i = 0; i < perThread; i++) {
                  counts.incrementAndGet(indexOf(picker.pickSubchannel(null)));
                }
              });
      threads[t].start();
    }
    for (Thread thread : threads) {
      thread.join();
    }

    // 160,000 picks = 20,000 whole periods of 8.
    assertThat(counts.get(0)).isEqualTo(20_000);
    assertThat(counts.get(1)).isEqualTo(40_000);
    assertThat(counts.get(2)).isEqualTo(100_000);
  }
}
