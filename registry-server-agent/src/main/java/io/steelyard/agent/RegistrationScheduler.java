package io.steelyard.agent;

import com.google.common.util.concurrent.ThreadFactoryBuilder;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import org.slf4j.Logger;

/**
 * The scheduler every {@link ServiceRegistration} of the JVM runs on (unless a test injects its
 * own): one daemon thread, {@code steelyard-registration}, created on first use and never shut
 * down, like grpc-java's shared timer. One thread is enough because nothing runs on it that waits
 * for etcd; each registration serialises its own work with a sequential executor on top.
 */
final class RegistrationScheduler {

  private RegistrationScheduler() {}

  static ScheduledExecutorService shared() {
    return Holder.INSTANCE;
  }

  /**
   * Runs {@code task} on {@code serial}, logging (not propagating) a failure so that one bad task
   * cannot stop the sequential executor; false if the scheduler no longer runs anything.
   */
  static boolean post(Executor serial, Runnable task, Logger logger, String kind, Object who) {
    try {
      serial.execute(
          () -> {
            try {
              task.run();
            } catch (RuntimeException e) {
              logger.error("Unexpected failure in the {} of {}", kind, who, e);
            }
          });
      return true;
    } catch (RejectedExecutionException e) {
      return false;
    }
  }

  // Lazily, on first use: an application that never registers never starts the thread.
  private static final class Holder {
    static final ScheduledExecutorService INSTANCE = create();
  }

  private static ScheduledExecutorService create() {
    ScheduledThreadPoolExecutor e =
        new ScheduledThreadPoolExecutor(
            1,
            new ThreadFactoryBuilder()
                .setNameFormat("steelyard-registration")
                .setDaemon(true)
                .build());
    // Cancelled retries and timeouts would otherwise linger in the queue until their deadline.
    e.setRemoveOnCancelPolicy(true);
    return e;
  }
}
