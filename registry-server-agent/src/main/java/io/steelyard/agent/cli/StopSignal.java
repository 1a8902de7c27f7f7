package io.steelyard.agent.cli;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * How a long-running command ({@code watch}, {@code register}) learns that it should stop: from
 * SIGINT/SIGTERM when run as a process, or from an interrupt of the calling thread in-process.
 */
final class StopSignal {

  private final CountDownLatch stopped = new CountDownLatch(1);

  private StopSignal() {}

  /** Stops only when the thread waiting in {@link #await} is interrupted (in-process use). */
  static StopSignal onInterrupt() {
    return new StopSignal();
  }

  /**
   * Stops on SIGINT or SIGTERM, so the command can clean up (revoke its lease, close its watch)
   * and exit 0. A JVM shutdown hook alone cannot do this: after a signal the JVM exits with
   * 128+signal whatever the hooks do. A second signal gets the default behaviour back, so a stuck
   * cleanup can still be killed with another Ctrl-C.
   */
  @SuppressWarnings("sunapi") // sun.misc.Signal: the only way to handle SIGTERM and still exit 0.
  static StopSignal onSignals() {
    StopSignal s = new StopSignal();
    for (String name : new String[] {"INT", "TERM"}) {
      try {
        sun.misc.Signal.handle(
            new sun.misc.Signal(name),
            sig -> {
              s.stop();
              sun.misc.Signal.handle(sig, sun.misc.SignalHandler.SIG_DFL);
            });
      } catch (IllegalArgumentException e) {
        // The signal is unavailable here (e.g. reserved by the JVM under -Xrs): keep the default.
      }
    }
    return s;
  }

  /** Asks the command to stop. */
  void stop() {
    stopped.countDown();
  }

  boolean isStopped() {
    return stopped.getCount() == 0;
  }

  /** Blocks until stopped; returns normally when the calling thread is interrupted. */
  void await() {
    try {
      stopped.await();
    } catch (InterruptedException e) {
      stop();
    }
  }

  /** Waits up to {@code max}; returns whether a stop was requested (or the thread interrupted). */
  boolean await(Duration max) {
    try {
      return stopped.await(max.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      stop();
      return true;
    }
  }
}
