package io.steelyard.discovery;

import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;

/**
 * Turns a burst of changes into one publish: the first change arms a timer of {@code delayNanos},
 * later changes ride on it, and the publish sees every change made until it fires. A deploy
 * that writes 100 keys within a few milliseconds therefore yields a handful of snapshots, while
 * a lone change waits at most {@code delayNanos}.
 *
 * <p>Not thread-safe: call it only from the owning watcher's serialized executor, which is also
 * where the publish runs.
 */
final class Coalescer {

  private final Scheduler scheduler;
  private final long delayNanos;
  private final Runnable publish;
  @Nullable private Future<?> pending;

  Coalescer(Scheduler scheduler, long delayNanos, Runnable publish) {
    this.scheduler = scheduler;
    this.delayNanos = delayNanos;
    this.publish = publish;
  }

  /** Something changed: publish within {@code delayNanos}. */
  void changed() {
    if (delayNanos <= 0) {
      publish.run();
      return;
    }
    if (pending == null) {
      pending = scheduler.schedule(this::fire, delayNanos, TimeUnit.NANOSECONDS);
    }
  }

  /** Publish now, absorbing any armed timer. */
  void flush() {
    cancel();
    publish.run();
  }

  void cancel() {
    if (pending != null) {
      pending.cancel(false);
      pending = null;
    }
  }

  boolean isArmed() {
    return pending != null;
  }

  private void fire() {
    if (pending == null) {
      return; // cancelled after it was queued
    }
    pending = null;
    publish.run();
  }
}
