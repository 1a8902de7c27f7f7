package io.steelyard.registry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.api.Test;

class BackoffTest {

  /** A Random whose nextDouble is always {@code value}. */
  private static Random fixed(double value) {
    return new Random() {
      private static final long serialVersionUID = 1L;

      @Override
      public double nextDouble() {
        return value;
      }
    };
  }

  private static Backoff backoff(double randomValue) {
    return new Backoff(Duration.ofMillis(200), Duration.ofSeconds(5), 0.2, fixed(randomValue));
  }

  @Test
  void doublesFromTheInitialDelayWithoutJitterAtTheMidpoint() {
    Backoff b = backoff(0.5);
    assertThat(b.delayNanos(0)).isEqualTo(Duration.ofMillis(200).toNanos());
    assertThat(b.delayNanos(1)).isEqualTo(Duration.ofMillis(400).toNanos());
    assertThat(b.delayNanos(2)).isEqualTo(Duration.ofMillis(800).toNanos());
    assertThat(b.delayNanos(4)).isEqualTo(Duration.ofMillis(3200).toNanos());
  }

  @Test
  void theCappedDelayIsTheMaximumJitteredBelowIt() {
    assertThat(backoff(0.5).cappedDelayNanos()).isEqualTo(Duration.ofSeconds(5).toNanos());
    assertThat(backoff(0.0).cappedDelayNanos()).isEqualTo(Duration.ofSeconds(4).toNanos());
    assertThat(backoff(0.99).cappedDelayNanos()).isEqualTo(Duration.ofSeconds(5).toNanos());
  }

  @Test
  void isCappedAtTheMaximum() {
    Backoff b = backoff(0.5);
    assertThat(b.delayNanos(5)).isEqualTo(Duration.ofSeconds(5).toNanos());
    assertThat(b.delayNanos(30)).isEqualTo(Duration.ofSeconds(5).toNanos());
    assertThat(b.delayNanos(100)).isEqualTo(Duration.ofSeconds(5).toNanos());
    assertThat(b.delayNanos(Integer.MAX_VALUE)).isEqualTo(Duration.ofSeconds(5).toNanos());
  }

  @Test
  void jitterScalesWithinPlusMinusTwentyPercent() {
    assertThat(backoff(0.0).delayNanos(1)).isEqualTo(Duration.ofMillis(320).toNanos());
    assertThat(backoff(0.999999).delayNanos(1)).isBetween(
        Duration.ofMillis(479).toNanos(), Duration.ofMillis(480).toNanos());
  }

  @Test
  void jitterNeverExceedsTheCap() {
    assertThat(backoff(0.999999).delayNanos(20)).isEqualTo(Duration.ofSeconds(5).toNanos());
    assertThat(backoff(0.0).delayNanos(20)).isEqualTo(Duration.ofSeconds(4).toNanos());
  }

  @Test
  void seededRandomStaysWithinBoundsForEveryAttempt() {
    Backoff b = new Backoff(Duration.ofMillis(100), Duration.ofSeconds(2), 0.2, new Random(42));
    for (int attempt = 0; attempt < 40; attempt++) {
      long base = Math.min(Duration.ofSeconds(2).toNanos(), Duration.ofMillis(100).toNanos() << Math.min(attempt, 30));
      assertThat(b.delayNanos(attempt))
          .isBetween((long) (base * 0.8) - 1, Math.min(Duration.ofSeconds(2).toNanos(), (long) (base * 1.2) + 1));
    }
  }

  @Test
  void refusesBadSettingsNamingThem() {
    assertThatThrownBy(() -> new Backoff(Duration.ZERO, Duration.ofSeconds(1), 0.2, new Random()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("retryInitialDelay: PT0S");
    assertThatThrownBy(
            () -> new Backoff(Duration.ofSeconds(2), Duration.ofSeconds(1), 0.2, new Random()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("retryMaxDelay: PT1S");
    assertThatThrownBy(
            () -> new Backoff(Duration.ofSeconds(1), Duration.ofSeconds(1), 1.5, new Random()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("jitter: 1.5");
  }
}
