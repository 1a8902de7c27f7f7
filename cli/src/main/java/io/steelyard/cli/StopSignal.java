package io.steelyard.cli;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * How a long-running command ({@code watch}, {@code register}) learns that it should stop: from
 * SIGINT/SIGTERM when run as a process, or from an interrupt of the calling thread in-process.
 */
final class StopSignal {

  private final CountDownLatch stopped = new CountDownLatch(1);
  private final boolean fromSignals;
  private boolean listening;

  private StopSignal(boolean fromSignals) {
    this.fromSignals = fromSignals;
  }

  /** Stops only when the thread waiting in {@link #await} is interrupted (in-process use). */
  static StopSignal onInterrupt() {
    return new StopSignal(false);
  }

  /**
   * Stops on SIGINT or SIGTERM once {@link #listen()} was called, so the command can clean up
   * (revoke its lease, close its watch) and exit 0. A JVM shutdown hook alone cannot do this:
   * after a signal the JVM exits with 128+signal whatever the hooks do.
   */
  static StopSignal onSignals() {
    return new StopSignal(true);
  }

  /**
   * Called by a long-running command before it waits. Only those commands take over SIGINT and
   * SIGTERM: a short command keeps the JVM's default, so Ctrl-C ends it at once. After the first
   * signal the default comes back, so a stuck cleanup can still be ended with another Ctrl-C.
   */
  // sun.misc.Signal is the supported way (jdk.unsupported) to handle SIGTERM and still exit 0;
  // javac's "internal proprietary API" warning for it cannot be suppressed.
  synchronized void listen() {
    if (!fromSignals || listening) {
      return;
    }
    listening = true;
    for (String name : new String[] {"INT", "TERM"}) {
      try {
        sun.misc.Signal.handle(
            new sun.misc.Signal(name),
            sig -> {
              stop();
              sun.misc.Signal.handle(sig, sun.misc.SignalHandler.SIG_DFL);
            });
      } catch (IllegalArgumentException e) {
        // The signal is unavailable here (e.g. reserved by the JVM under -Xrs): keep the default.
      }
    }
  }

  /** Asks the command to stop. */
  void stop() {
    stopped.countDown();
  }

  /** Blocks until stopped; returns normally when the calling thread is interrupted. */
  void await() {
    try {
      stopped.await();
    } catch (InterruptedException e) {
      stop();
    }
  }

  boolean isStopped() {
    return stopped.getCount() == 0;
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
