package io.steelyard.discovery;

import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The serialized executor, timer and clock of the watchers. Production code uses one daemon
 * thread for every watcher of the process; tests use a fake whose time only moves when told.
 *
 * <p>Every task submitted to one {@code Scheduler} runs on one thread at a time, in order, so
 * the watcher state touched only from its tasks needs no lock.
 */
interface Scheduler {

  void execute(Runnable task);

  Future<?> schedule(Runnable task, long delay, TimeUnit unit);

  long nanoTime();

  long currentTimeMillis();

  /** The process-wide scheduler: one daemon thread named {@code steelyard-discovery}. */
  static Scheduler shared() {
    return Shared.INSTANCE;
  }

  final class Shared {
    static final Scheduler INSTANCE = of(newExecutor());

    private Shared() {}

    private static ScheduledExecutorService newExecutor() {
      ScheduledThreadPoolExecutor e =
          new ScheduledThreadPoolExecutor(
              1,
              r -> {
                Thread t = new Thread(r, "steelyard-discovery");
                t.setDaemon(true);
                return t;
              });
      // Cancelled debounce and retry timers would otherwise linger until their deadline.
      e.setRemoveOnCancelPolicy(true);
      return e;
    }
  }

  static Scheduler of(ScheduledExecutorService executor) {
    return new Scheduler() {
      @Override
      public void execute(Runnable task) {
        executor.execute(task);
      }

      @Override
      public Future<?> schedule(Runnable task, long delay, TimeUnit unit) {
        return executor.schedule(task, delay, unit);
      }

      @Override
      public long nanoTime() {
        return System.nanoTime();
      }

      @Override
      public long currentTimeMillis() {
        return System.currentTimeMillis();
      }
    };
  }
}
