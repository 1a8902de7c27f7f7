package io.steelyard.balancer.internal;

import static com.google.common.base.Preconditions.checkArgument;

import com.google.common.annotations.VisibleForTesting;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Positions in a round-robin schedule, one per <em>stripe</em>, so that threads picking at the
 * same time do not write the same cache line (one shared counter made 2 threads slower than 1).
 *
 * <p>A thread always uses stripe {@code threadId mod stripes}: no thread-local lookup, and any
 * {@code stripes} consecutive ids (threads a pool creates one after another) fall on distinct
 * stripes. Each position sits on its own 128 bytes, clear of the array header, because x86
 * prefetches cache lines in pairs.
 *
 * <p><b>Cost.</b> A position is a slot index in {@code [0, length)}, advanced with a plain
 * (opaque) read and write and wrapped with a compare: no locked instruction and no division on
 * the pick path. A locked {@code getAndIncrement} and a 64-bit remainder per pick cost about four
 * times as much as the whole pick does now (see {@code docs/benchmarks.md}).
 *
 * <p><b>Threads.</b> Thread-safe and lock-free. A thread alone on its stripe sees exactly the
 * schedule's sequence. Two threads that share a stripe (ids equal modulo the stripe count, both
 * picking at the same instant) may read the same position and take the same slot, and one
 * advance is then lost: each pick is still a valid slot, but that stripe's counts can drift from
 * the schedule's by the number of such collisions. The stripe count is twice the processors, so
 * running threads rarely share one.
 */
final class StripedPositions {

  /** Upper bound of the default stripe count: 64 stripes are 8 KiB per balancer. */
  static final int MAX_STRIPES = 64;

  /** Ints from one position to the next: 128 bytes, two cache lines. */
  private static final int SPACING = 32;

  private static final VarHandle POSITION = MethodHandles.arrayElementVarHandle(int[].class);

  private final int[] positions;
  private final int mask;

  /**
   * Stripe {@code s} starts at slot {@code initialPositions[s]} (taken modulo the schedule's
   * length on its first pick); the number of stripes is the array's length, a power of two.
   */
  StripedPositions(int[] initialPositions) {
    int stripes = initialPositions.length;
    checkArgument(
        stripes > 0 && Integer.bitCount(stripes) == 1,
        "stripes: %s (expected: a power of two)",
        stripes);
    this.positions = new int[(stripes + 1) * SPACING];
    this.mask = stripes - 1;
    for (int s = 0; s < stripes; s++) {
      checkArgument(initialPositions[s] >= 0, "initialPositions[%s]: %s (expected: >= 0)", s,
          initialPositions[s]);
      positions[index(s)] = initialPositions[s];
    }
  }

  /**
   * Stripes for this machine, each starting at a random position (so that many clients do not
   * all begin on the same endpoint).
   */
  static StripedPositions forThisMachine() {
    int[] initial = new int[defaultStripes(Runtime.getRuntime().availableProcessors())];
    for (int s = 0; s < initial.length; s++) {
      initial[s] = ThreadLocalRandom.current().nextInt(Integer.MAX_VALUE);
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

  /**
   * The calling thread's stripe's slot in a schedule of {@code length} slots, then advances it by
   * one (wrapping to 0 after the last slot).
   */
  int next(int length) {
    return next(stripeOf(Thread.currentThread()), length);
  }

  /**
   * Stripe {@code stripe}'s slot in a schedule of {@code length} slots, then advances it by one.
   * A position at or past {@code length} (a random start, or a swap to a shorter schedule) is
   * first taken modulo {@code length}; that is the only division, and it happens once.
   */
  int next(int stripe, int length) {
    int i = index(stripe);
    int slot = (int) POSITION.getOpaque(positions, i);
    if (slot >= length) {
      slot %= length;
    }
    int following = slot + 1;
    POSITION.setOpaque(positions, i, following == length ? 0 : following);
    return slot;
  }

  private static int index(int stripe) {
    return (stripe + 1) * SPACING;
  }
}
