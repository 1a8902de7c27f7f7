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

  /**
   * A scheduler on one new daemon thread named {@code threadName}. The process-wide
   * {@link WatchRegistry#SHARED} makes the one every watcher of the process runs on.
   */
  static Scheduler newDaemon(String threadName) {
    ScheduledThreadPoolExecutor e =
        new ScheduledThreadPoolExecutor(
            1,
            r -> {
              Thread t = new Thread(r, threadName);
              t.setDaemon(true);
              return t;
            });
    // Cancelled debounce and retry timers would otherwise linger until their deadline.
    e.setRemoveOnCancelPolicy(true);
    return of(e);
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
