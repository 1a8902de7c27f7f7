package io.steelyard.balancer.internal;

import com.google.common.base.Ticker;
import java.time.Duration;

/** A ticker that moves only when the test says so. */
final class FakeTicker extends Ticker {
  private long nanos = 1_000_000_000L;

  @Override
  public long read() {
    return nanos;
  }

  FakeTicker advance(Duration d) {
    nanos += d.toNanos();
    return this;
  }
}
