package io.steelyard.discovery;

import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;

/**
 * Publishes at most once per window of {@code windowNanos}, leading edge first: a change after a
 * quiet period is published at once (a lone weight change costs no delay), and changes that
 * follow within the window ride on one trailing publish at the window's end, which sees every
 * change made until then. A deploy that writes 100 keys within a few milliseconds therefore
 * yields two or three snapshots, not 100.
 *
 * <p>Not thread-safe: call it only from the owning watcher's serialized executor, which is also
 * where the publish runs.
 */
final class Coalescer {

  private final Scheduler scheduler;
  private final long windowNanos;
  private final Runnable publish;
  @Nullable private Future<?> pending;
  private boolean published;
  private long lastPublishNanos;

  Coalescer(Scheduler scheduler, long windowNanos, Runnable publish) {
    this.scheduler = scheduler;
    this.windowNanos = windowNanos;
    this.publish = publish;
  }

  /** Something changed: publish now if the window since the last publish is over, else at its end. */
  void changed() {
    if (pending != null) {
      return; // the trailing publish will include this change
    }
    long sinceLast = scheduler.nanoTime() - lastPublishNanos;
    if (windowNanos <= 0 || !published || sinceLast >= windowNanos) {
      run();
      return;
    }
    pending = scheduler.schedule(this::fire, windowNanos - sinceLast, TimeUnit.NANOSECONDS);
  }

  /** Publish now, absorbing any armed timer. */
  void flush() {
    cancel();
    run();
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
    run();
  }

  private void run() {
    published = true;
    lastPublishNanos = scheduler.nanoTime();
    publish.run();
  }
}
