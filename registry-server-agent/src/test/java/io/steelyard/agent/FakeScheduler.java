package io.steelyard.agent;

import static java.util.Objects.requireNonNull;

import com.google.common.base.Ticker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.Callable;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * A scheduler whose time moves only when the test says so: tasks run on the test's thread, in
 * due order, from {@link #runDue()} and {@link #forwardTime}. Tasks may be submitted from any
 * thread (jetcd callbacks hop onto the registration's executor, which is over this one).
 */
final class FakeScheduler extends AbstractExecutorService implements ScheduledExecutorService {

  private final PriorityQueue<Task> queue = new PriorityQueue<>();
  private final List<Long> delaysNanos = new ArrayList<>();
  private long nowNanos;
  private long seq;
  private int ran;

  final Ticker ticker =
      new Ticker() {
        @Override
        public long read() {
          synchronized (FakeScheduler.this) {
            return nowNanos;
          }
        }
      };

  /** Runs every task due now, including those they submit; returns how many ran. */
  int runDue() {
    int n = 0;
    while (true) {
      Task t;
      synchronized (this) {
        t = queue.peek();
        if (t == null || t.dueNanos > nowNanos) {
          return n;
        }
        queue.poll();
        ran++;
      }
      n++;
      t.run();
    }
  }

  /** Moves time forward by {@code d}, running each task at its due time. */
  void forwardTime(Duration d) {
    long target;
    synchronized (this) {
      target = nowNanos + d.toNanos();
    }
    while (true) {
      runDue();
      synchronized (this) {
        Task next = queue.peek();
        if (next == null || next.dueNanos > target) {
          nowNanos = target;
          break;
        }
        nowNanos = Math.max(nowNanos, next.dueNanos);
      }
    }
    runDue();
  }

  /** Every positive delay asked for so far, in order: timeouts, retries, watch re-reads. */
  synchronized List<Long> delaysNanos() {
    return List.copyOf(delaysNanos);
  }

  /** Tasks waiting (not cancelled, not run). */
  synchronized int pending() {
    return (int) queue.stream().filter(t -> !t.cancelled).count();
  }

  /** Tasks run so far. */
  synchronized int ran() {
    return ran;
  }

  @Override
  public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
    requireNonNull(command, "command");
    long delayNanos = Math.max(0, unit.toNanos(delay));
    synchronized (this) {
      if (delayNanos > 0) {
        delaysNanos.add(delayNanos);
      }
      Task t = new Task(command, nowNanos + delayNanos, seq++);
      queue.add(t);
      return t;
    }
  }

  @Override
  public void execute(Runnable command) {
    schedule(command, 0, TimeUnit.NANOSECONDS);
  }

  @Override
  public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
    throw new UnsupportedOperationException();
  }

  @Override
  public ScheduledFuture<?> scheduleAtFixedRate(
      Runnable command, long initialDelay, long period, TimeUnit unit) {
    throw new UnsupportedOperationException();
  }

  @Override
  public ScheduledFuture<?> scheduleWithFixedDelay(
      Runnable command, long initialDelay, long delay, TimeUnit unit) {
    throw new UnsupportedOperationException();
  }

  @Override
  public void shutdown() {}

  @Override
  public List<Runnable> shutdownNow() {
    return List.of();
  }

  @Override
  public boolean isShutdown() {
    return false;
  }

  @Override
  public boolean isTerminated() {
    return false;
  }

  @Override
  public boolean awaitTermination(long timeout, TimeUnit unit) {
    return false;
  }

  private final class Task implements ScheduledFuture<Void>, Runnable {
    final Runnable command;
    final long dueNanos;
    final long order;
    volatile boolean cancelled;
    volatile boolean done;

    Task(Runnable command, long dueNanos, long order) {
      this.command = command;
      this.dueNanos = dueNanos;
      this.order = order;
    }

    @Override
    public void run() {
      if (!cancelled) {
        done = true;
        command.run();
      }
    }

    @Override
    public long getDelay(TimeUnit unit) {
      return unit.convert(dueNanos - ticker.read(), TimeUnit.NANOSECONDS);
    }

    @Override
    public int compareTo(Delayed o) {
      Task other = (Task) o;
      int c = Long.compare(dueNanos, other.dueNanos);
      return c != 0 ? c : Long.compare(order, other.order);
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      if (done) {
        return false;
      }
      cancelled = true;
      synchronized (FakeScheduler.this) {
        queue.remove(this);
      }
      return true;
    }

    @Override
    public boolean isCancelled() {
      return cancelled;
    }

    @Override
    public boolean isDone() {
      return done || cancelled;
    }

    @Override
    public Void get() {
      throw new UnsupportedOperationException();
    }

    @Override
    public Void get(long timeout, TimeUnit unit) {
      throw new UnsupportedOperationException();
    }
  }
}
