package io.steelyard.it.faults;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/** Small helpers the fault cases share. */
final class Faults {

  private Faults() {}

  /**
   * Waits until {@code hold} has passed since {@code sinceNanos}. Holding a fault for a fixed time
   * is the point of the cases that call this, so it waits on the clock, not on a condition.
   */
  static void holdUntil(long sinceNanos, Duration hold) throws InterruptedException {
    long left = sinceNanos + hold.toNanos() - System.nanoTime();
    if (left > 0) {
      TimeUnit.NANOSECONDS.sleep(left);
    }
  }
}
