package io.steelyard.discovery;

import static com.google.common.base.Preconditions.checkArgument;

import java.util.Random;

/**
 * Capped exponential backoff with full jitter in [delay/2, delay]: the n-th consecutive failure
 * waits about {@code initial * 2^(n-1)}, never more than {@code max}. Jitter keeps a fleet of
 * clients from reconnecting to a recovering etcd in lock step.
 */
final class Backoff {

  private final long initialNanos;
  private final long maxNanos;
  private final Random random;

  Backoff(long initialNanos, long maxNanos, Random random) {
    checkArgument(initialNanos > 0, "initialNanos: %s (expected: > 0)", initialNanos);
    checkArgument(maxNanos >= initialNanos, "maxNanos: %s (expected: >= %s)", maxNanos, initialNanos);
    this.initialNanos = initialNanos;
    this.maxNanos = maxNanos;
    this.random = random;
  }

  /** Delay before the retry that follows the {@code failures}-th consecutive failure (>= 1). */
  long delayNanos(int failures) {
    int shift = Math.max(0, Math.min(failures - 1, 30));
    long d = initialNanos << shift;
    if (d <= 0 || d > maxNanos) {
      d = maxNanos;
    }
    long half = d / 2;
    return half + (long) (random.nextDouble() * (d - half));
  }
}
