package io.steelyard.examples;

import static com.google.common.base.Preconditions.checkArgument;
import static java.util.Objects.requireNonNull;

import java.time.Duration;

/**
 * What the example server does wrong on purpose, for tests of outlier detection and timeouts
 * ({@code bin/greeter-server --fail-percent P --delay DURATION}): fail {@code failPercent} of the
 * calls with {@code UNAVAILABLE}, and answer the others {@code delay} late.
 *
 * <p>The failures are spread evenly, not drawn: call {@code n} (from 1) fails when {@code
 * n·P/100} passes a whole number, so every 100 calls hold exactly {@code P} failures and a test
 * needs no seed.
 *
 * @param failPercent 0..100
 * @param delay how long each answer waits, zero for none
 */
public record GreeterFaults(int failPercent, Duration delay) {

  /** Answers every call at once. */
  public static final GreeterFaults NONE = new GreeterFaults(0, Duration.ZERO);

  public GreeterFaults {
    checkArgument(failPercent >= 0 && failPercent <= 100, "failPercent: %s (expected: 0..100)", failPercent);
    requireNonNull(delay, "delay");
    checkArgument(!delay.isNegative(), "delay: %s (expected: >= 0)", delay);
  }

  /** Whether call number {@code n} (from 1) fails. */
  boolean fails(long n) {
    return n * failPercent / 100 > (n - 1) * failPercent / 100;
  }
}
