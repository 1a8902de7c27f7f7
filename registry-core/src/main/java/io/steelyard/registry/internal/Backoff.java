package io.steelyard.registry.internal;

import static com.google.common.base.Preconditions.checkArgument;
import static java.util.Objects.requireNonNull;

import java.time.Duration;
import java.util.Random;

/**
 * Capped exponential backoff with jitter, the delays of the {@link RetryPolicy} every loop that
 * talks to etcd retries with (the agent's registration, the discovery client's re-list/re-watch):
 * attempt {@code n} (0-based)
 * waits {@code min(max, initial * 2^n)} scaled by a random factor in {@code [1 - jitter, 1 + jitter]},
 * and never more than {@code max}. Jitter spreads the retries of many servers that lost etcd at
 * the same moment, so they do not all grant leases in the same millisecond when it returns.
 *
 * <p>Immutable apart from the injected {@link Random}; confine each instance to one thread (the
 * owner's serialising executor), as {@link Random} is.
 */
public final class Backoff {

  private final long initialNanos;
  private final long maxNanos;
  private final double jitter;
  private final Random random;

  public Backoff(Duration initial, Duration max, double jitter, Random random) {
    requireNonNull(initial, "initial");
    requireNonNull(max, "max");
    checkArgument(
        !initial.isNegative() && !initial.isZero(), "retryInitialDelay: %s (expected: > 0)", initial);
    checkArgument(
        max.compareTo(initial) >= 0, "retryMaxDelay: %s (expected: >= %s)", max, initial);
    checkArgument(jitter >= 0 && jitter < 1, "jitter: %s (expected: 0 <= jitter < 1)", jitter);
    this.initialNanos = initial.toNanos();
    this.maxNanos = max.toNanos();
    this.jitter = jitter;
    this.random = requireNonNull(random, "random");
  }

  /** The delay before retry number {@code attempt} (0 for the first retry). */
  public long delayNanos(int attempt) {
    checkArgument(attempt >= 0, "attempt: %s (expected: >= 0)", attempt);
    // 2^62 already exceeds any sane cap; stop doubling before the long overflows.
    long base = attempt >= 62 ? maxNanos : Math.min(maxNanos, saturatedShift(initialNanos, attempt));
    double factor = 1 + jitter * (2 * random.nextDouble() - 1);
    long jittered = (long) (base * factor);
    return Math.max(1, Math.min(maxNanos, jittered));
  }

  /** The delay at the cap, jittered below it: for failures that a quick retry cannot fix. */
  public long cappedDelayNanos() {
    return delayNanos(62);
  }

  private static long saturatedShift(long value, int shift) {
    if (value > (Long.MAX_VALUE >> shift)) {
      return Long.MAX_VALUE;
    }
    return value << shift;
  }
}
