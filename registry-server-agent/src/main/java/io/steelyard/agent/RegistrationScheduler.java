package io.steelyard.agent;

import com.google.common.util.concurrent.ThreadFactoryBuilder;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;

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
