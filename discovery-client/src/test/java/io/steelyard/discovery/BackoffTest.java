package io.steelyard.discovery;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class BackoffTest {

  private static final long INITIAL = TimeUnit.MILLISECONDS.toNanos(200);
  private static final long MAX = TimeUnit.SECONDS.toNanos(10);

  @Test
  void doublesPerFailureWithinHalfJitter() {
    Backoff b = new Backoff(INITIAL, MAX, new Random(42));
    for (int failures = 1; failures <= 6; failures++) {
      long ceiling = INITIAL << (failures - 1);
      assertThat(b.delayNanos(failures)).isBetween(ceiling / 2, ceiling);
    }
  }

  @Test
  void isCappedEvenAfterManyFailures() {
    Backoff b = new Backoff(INITIAL, MAX, new Random(7));
    for (int failures : new int[] {7, 20, 64, 1_000, Integer.MAX_VALUE}) {
      assertThat(b.delayNanos(failures)).isBetween(MAX / 2, MAX);
    }
  }

  @Test
  void jitterSpreadsClients() {
    Backoff a = new Backoff(INITIAL, MAX, new Random(1));
    Backoff b = new Backoff(INITIAL, MAX, new Random(2));
    assertThat(a.delayNanos(5)).isNotEqualTo(b.delayNanos(5));
  }

  @Test
  void rejectsAMaxBelowTheInitialDelay() {
    assertThatThrownBy(() -> new Backoff(MAX, INITIAL, new Random()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxNanos");
  }
}
