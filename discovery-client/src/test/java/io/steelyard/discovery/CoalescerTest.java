package io.steelyard.discovery;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class CoalescerTest {

  private final InlineFakeScheduler scheduler = new InlineFakeScheduler();
  private final AtomicInteger publishes = new AtomicInteger();
  private final Coalescer coalescer =
      new Coalescer(scheduler, TimeUnit.MILLISECONDS.toNanos(10), publishes::incrementAndGet);

  @Test
  void loneChangeIsPublishedAtOnce() {
    coalescer.changed();
    assertThat(publishes).hasValue(1);
    assertThat(coalescer.isArmed()).isFalse();
  }

  @Test
  void burstOfAHundredChangesYieldsTwoPublishes() {
    for (int i = 0; i < 100; i++) {
      coalescer.changed();
      scheduler.forward(50, TimeUnit.MICROSECONDS); // 100 changes within 5 ms
    }
    assertThat(publishes).hasValue(1); // the leading one
    scheduler.forward(10, TimeUnit.MILLISECONDS);
    assertThat(publishes).hasValue(2); // one trailing publish carries the other 99
    assertThat(scheduler.pendingTasks()).isZero();
  }

  @Test
  void changeSoonAfterAPublishWaitsOnlyForTheRestOfTheWindow() {
    coalescer.changed(); // published at t=0
    scheduler.forward(3, TimeUnit.MILLISECONDS);
    coalescer.changed();
    scheduler.forward(6_999, TimeUnit.MICROSECONDS);
    assertThat(publishes).hasValue(1);
    scheduler.forward(1, TimeUnit.MICROSECONDS); // t=10 ms
    assertThat(publishes).hasValue(2);
  }

  @Test
  void changeAfterAQuietWindowIsPublishedAtOnceAgain() {
    coalescer.changed();
    scheduler.forward(10, TimeUnit.MILLISECONDS);
    coalescer.changed();
    assertThat(publishes).hasValue(2);
  }

  @Test
  void flushPublishesNowAndAbsorbsTheArmedTimer() {
    coalescer.changed();
    coalescer.changed(); // arms the trailing timer
    assertThat(coalescer.isArmed()).isTrue();
    coalescer.flush();
    assertThat(publishes).hasValue(2);
    assertThat(coalescer.isArmed()).isFalse();
    scheduler.forward(1, TimeUnit.SECONDS);
    assertThat(publishes).hasValue(2);
  }

  @Test
  void zeroWindowPublishesEveryChange() {
    Coalescer immediate = new Coalescer(scheduler, 0, publishes::incrementAndGet);
    immediate.changed();
    immediate.changed();
    assertThat(publishes).hasValue(2);
  }
}
