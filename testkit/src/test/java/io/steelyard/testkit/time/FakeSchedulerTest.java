package io.steelyard.testkit.time;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class FakeSchedulerTest {

  private final FakeScheduler fake = new FakeScheduler();
  private final List<String> ran = new ArrayList<>();

  @Test
  void executeQueuesTheTaskUntilTheTestRunsIt() {
    fake.execute(() -> ran.add("a"));

    assertThat(ran).isEmpty();
    assertThat(fake.runDue()).isEqualTo(1);
    assertThat(ran).containsExactly("a");
  }

  @Test
  void timersFireAtTheirDueTimeInDueOrderThenSubmissionOrder() {
    fake.schedule(() -> ran.add("b@2s:" + fake.nanoTime()), 2, TimeUnit.SECONDS);
    fake.schedule(() -> ran.add("a@1s:" + fake.nanoTime()), 1, TimeUnit.SECONDS);
    fake.schedule(() -> ran.add("c@2s:" + fake.nanoTime()), 2, TimeUnit.SECONDS);

    fake.forwardTime(Duration.ofMillis(1_999));
    assertThat(ran).containsExactly("a@1s:1000000000");
    fake.forwardTime(Duration.ofMillis(1));
    assertThat(ran).containsExactly("a@1s:1000000000", "b@2s:2000000000", "c@2s:2000000000");
    assertThat(fake.ticker.read()).isEqualTo(fake.nanoTime()).isEqualTo(2_000_000_000L);
  }

  @Test
  void aTimerSetByATimerFiresWithinTheSameForwardWhenDue() {
    fake.schedule(() -> fake.schedule(() -> ran.add("retry"), 1, TimeUnit.SECONDS), 1, TimeUnit.SECONDS);

    fake.forwardTime(Duration.ofSeconds(2));

    assertThat(ran).containsExactly("retry");
    assertThat(fake.delaysNanos()).containsExactly(1_000_000_000L, 1_000_000_000L);
  }

  @Test
  void aCancelledTimerNeverRunsAndIsNotPending() {
    ScheduledFuture<?> timer = fake.schedule(() -> ran.add("x"), 1, TimeUnit.SECONDS);
    assertThat(fake.pending()).isEqualTo(1);

    assertThat(timer.cancel(false)).isTrue();
    fake.forwardTime(Duration.ofHours(1));

    assertThat(ran).isEmpty();
    assertThat(fake.pending()).isZero();
    assertThat(fake.ran()).isZero();
    assertThat(timer.isCancelled()).isTrue();
  }
}
