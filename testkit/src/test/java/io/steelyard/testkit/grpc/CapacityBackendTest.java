package io.steelyard.testkit.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import io.steelyard.testkit.time.FakeScheduler;
import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The capacity model's warm-up (a cold server) under fake time: no call, no real clock. */
class CapacityBackendTest {

  private static final Duration SERVICE = Duration.ofMillis(100);

  private final FakeScheduler fake = new FakeScheduler();

  /** Many workers, so that no call below waits for a worker: a delay is one service time. */
  private CapacityBackend backend(long seed) {
    return new CapacityBackend("s", 1_000, SERVICE, fake, new Random(seed), fake.ticker);
  }

  @Test
  void withoutWarmUpServiceTimesAreNormal() {
    assertThat(backend(1).serviceTimeFactor()).isEqualTo(1.0);
  }

  @Test
  void warmUpFallsLinearlyFromItsFactorToNormalOverItsDuration() {
    CapacityBackend backend = backend(1);
    fake.forwardTime(Duration.ofSeconds(7)); // the warm-up counts from its start, not creation

    backend.startWarmUp(4, Duration.ofSeconds(4));

    assertThat(backend.serviceTimeFactor()).isEqualTo(4.0);
    fake.forwardTime(Duration.ofSeconds(1));
    assertThat(backend.serviceTimeFactor()).isCloseTo(3.25, within(1e-9));
    fake.forwardTime(Duration.ofSeconds(2));
    assertThat(backend.serviceTimeFactor()).isCloseTo(1.75, within(1e-9));
    fake.forwardTime(Duration.ofSeconds(1));
    assertThat(backend.serviceTimeFactor()).isEqualTo(1.0);
    fake.forwardTime(Duration.ofSeconds(60));
    assertThat(backend.serviceTimeFactor()).isEqualTo(1.0);
  }

  @Test
  void warmUpMultipliesWithSlowdown() {
    CapacityBackend backend = backend(1);
    backend.setSlowdown(2);
    backend.startWarmUp(3, Duration.ofSeconds(2));

    assertThat(backend.serviceTimeFactor()).isEqualTo(6.0);
    fake.forwardTime(Duration.ofSeconds(1));
    assertThat(backend.serviceTimeFactor()).isCloseTo(4.0, within(1e-9));
  }

  @Test
  void aCallArrivingDuringWarmUpTakesThatManyTimesItsServiceTime() {
    CapacityBackend cold = backend(5);
    CapacityBackend warm = backend(5); // same seed: the same drawn service times
    cold.startWarmUp(4, Duration.ofSeconds(4));

    long now = fake.nanoTime();
    assertThat((double) cold.admit(now)).isCloseTo(4.0 * warm.admit(now), within(4.0));
    fake.forwardTime(Duration.ofSeconds(2));
    now = fake.nanoTime();
    assertThat((double) cold.admit(now)).isCloseTo(2.5 * warm.admit(now), within(4.0));
    fake.forwardTime(Duration.ofSeconds(2));
    now = fake.nanoTime();
    assertThat(cold.admit(now)).isEqualTo(warm.admit(now));
  }

  @Test
  void aBadWarmUpIsRefusedWithTheValue() {
    CapacityBackend backend = backend(1);

    assertThatThrownBy(() -> backend.startWarmUp(0.5, Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("factor: 0.5 (expected: >= 1)");
    assertThatThrownBy(() -> backend.startWarmUp(2, Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("duration: PT0S (expected: > 0)");
  }
}
