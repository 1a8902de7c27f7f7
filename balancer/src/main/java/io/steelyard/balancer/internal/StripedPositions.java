package io.steelyard.balancer.internal;

import static com.google.common.base.Preconditions.checkArgument;

import com.google.common.annotations.VisibleForTesting;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Positions in a round-robin schedule, one per <em>stripe</em>, so that threads picking at the
 * same time do not write the same cache line (one shared counter made 2 threads slower than 1).
 *
 * <p>A thread always uses stripe {@code threadId mod stripes}: no thread-local lookup, and any
 * {@code stripes} consecutive ids (threads a pool creates one after another) fall on distinct
 * stripes. Two threads on one stripe still get correct picks (the counter is atomic); they merely
 * contend, as every thread did on the single counter before. Each counter sits on its own 128
 * bytes, clear of the array header, because x86 prefetches cache lines in pairs.
 *
 * <p>Thread-safe and lock-free: {@link #next()} is one uncontended {@code getAndIncrement}.
 */
final class StripedPositions {

  /** Upper bound of the default stripe count: 64 stripes are 8 KiB per balancer. */
  static final int MAX_STRIPES = 64;

  /** Longs from one counter to the next: 128 bytes, two cache lines. */
  private static final int SPACING = 16;

  private final AtomicLongArray counters;
  private final int mask;

  /**
   * Stripe {@code s} starts at {@code initialPositions[s]}; the number of stripes is the array's
   * length, a power of two.
   */
  StripedPositions(long[] initialPositions) {
    int stripes = initialPositions.length;
    checkArgument(
        stripes > 0 && Integer.bitCount(stripes) == 1,
        "stripes: %s (expected: a power of two)",
        stripes);
    this.counters = new AtomicLongArray((stripes + 1) * SPACING);
    this.mask = stripes - 1;
    for (int s = 0; s < stripes; s++) {
      counters.set(index(s), initialPositions[s]);
    }
  }

  /**
   * Stripes for this machine, each starting at a random position below 2^32 (so that many clients
   * do not all begin on the same endpoint, and a counter needs centuries of picks to reach 2^63).
   */
  static StripedPositions forThisMachine() {
    long[] initial = new long[defaultStripes(Runtime.getRuntime().availableProcessors())];
    for (int s = 0; s < initial.length; s++) {
      initial[s] = ThreadLocalRandom.current().nextLong(1L << 32);
    }
    return new StripedPositions(initial);
  }

  /**
   * Twice the processors, rounded up to a power of two, at most {@value #MAX_STRIPES}: more
   * stripes than threads that can run at once, so that ids rarely collide among running threads.
   */
  @VisibleForTesting
  static int defaultStripes(int processors) {
    int wanted = Math.max(2, Math.min(MAX_STRIPES, 2 * processors));
    return Integer.highestOneBit(wanted - 1) << 1;
  }

  int stripes() {
    return mask + 1;
  }

  /** The stripe {@code thread} always uses. */
  int stripeOf(Thread thread) {
    return stripeOf(thread.getId());
  }

  @VisibleForTesting
  int stripeOf(long threadId) {
    return (int) threadId & mask;
  }

  /** The calling thread's stripe's current position, then advances it by one. */
  long next() {
    return next(stripeOf(Thread.currentThread()));
  }

  /** Stripe {@code stripe}'s current position, then advances it by one. */
  long next(int stripe) {
    return counters.getAndIncrement(index(stripe));
  }

  private static int index(int stripe) {
    return (stripe + 1) * SPACING;
  }
}
