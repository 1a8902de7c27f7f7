package io.steelyard.discovery;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class CoalescerTest {

  private final FakeScheduler scheduler = new FakeScheduler();
  private final AtomicInteger publishes = new AtomicInteger();
  private final Coalescer coalescer =
      new Coalescer(scheduler, TimeUnit.MILLISECONDS.toNanos(10), publishes::incrementAndGet);

  @Test
  void burstWithinTheWindowPublishesOnce() {
    for (int i = 0; i < 100; i++) {
      coalescer.changed();
      scheduler.forward(50, TimeUnit.MICROSECONDS);
    }
    assertThat(publishes).hasValue(0);
    scheduler.forward(10, TimeUnit.MILLISECONDS);
    assertThat(publishes).hasValue(1);
    assertThat(scheduler.pendingTasks()).isZero();
  }

  @Test
  void loneChangeIsPublishedAfterTheWindowNotBefore() {
    coalescer.changed();
    scheduler.forward(9_999, TimeUnit.MICROSECONDS);
    assertThat(publishes).hasValue(0);
    scheduler.forward(1, TimeUnit.MICROSECONDS);
    assertThat(publishes).hasValue(1);
  }

  @Test
  void changesAfterAPublishArmANewWindow() {
    coalescer.changed();
    scheduler.forward(10, TimeUnit.MILLISECONDS);
    coalescer.changed();
    coalescer.changed();
    scheduler.forward(10, TimeUnit.MILLISECONDS);
    assertThat(publishes).hasValue(2);
  }

  @Test
  void flushPublishesNowAndAbsorbsTheArmedTimer() {
    coalescer.changed();
    coalescer.flush();
    assertThat(publishes).hasValue(1);
    assertThat(coalescer.isArmed()).isFalse();
    scheduler.forward(1, TimeUnit.SECONDS);
    assertThat(publishes).hasValue(1);
  }

  @Test
  void zeroWindowPublishesEveryChange() {
    Coalescer immediate = new Coalescer(scheduler, 0, publishes::incrementAndGet);
    immediate.changed();
    immediate.changed();
    assertThat(publishes).hasValue(2);
  }
}
