package io.steelyard.discovery;

import io.steelyard.testkit.time.FakeScheduler;
import java.time.Duration;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * The testkit's {@link FakeScheduler} behind the watchers' {@link Scheduler} seam: time moves
 * only in {@link #forward}, timers fire on the test's thread at their due time, and {@link
 * #execute} runs the task at once on the caller, so a test sees the effect of {@code start()} or
 * of a scripted etcd answer without running anything.
 */
final class InlineFakeScheduler implements Scheduler {

  private final FakeScheduler time = new FakeScheduler();

  @Override
  public void execute(Runnable task) {
    task.run();
  }

  @Override
  public Future<?> schedule(Runnable task, long delay, TimeUnit unit) {
    return time.schedule(task, delay, unit);
  }

  @Override
  public long nanoTime() {
    return time.nanoTime();
  }

  @Override
  public long currentTimeMillis() {
    return TimeUnit.NANOSECONDS.toMillis(time.nanoTime());
  }

  /** Moves time forward, running each timer at its due time. */
  void forward(long amount, TimeUnit unit) {
    time.forwardTime(Duration.ofNanos(unit.toNanos(amount)));
  }

  /** Timers waiting (not cancelled, not run). */
  int pendingTasks() {
    return time.pending();
  }
}
