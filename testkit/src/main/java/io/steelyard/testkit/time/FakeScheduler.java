package io.steelyard.testkit.time;

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
 * due order (ties in submission order), from {@link #runDue()} and {@link #forwardTime}; {@link
 * #execute} queues a task due now, it never runs it on the caller. Tasks may be submitted from
 * any thread (jetcd callbacks hop onto a registration's executor, which is over this one).
 *
 * <pre>{@code
 * FakeScheduler fake = new FakeScheduler();
 * ServiceRegistration r = ServiceRegistration.builder(...).scheduler(fake, fake.ticker).build();
 * fake.runDue();                          // what is due now
 * fake.forwardTime(Duration.ofSeconds(5)); // each timer fires at its due time
 * }</pre>
 *
 * <p>Only {@code execute} and the two one-shot {@code schedule} methods are supported; shutdown
 * does nothing. Thread-safe.
 */
public final class FakeScheduler extends AbstractExecutorService implements ScheduledExecutorService {

  private final PriorityQueue<Task> queue = new PriorityQueue<>();
  private final List<Long> delaysNanos = new ArrayList<>();
  private long nowNanos;
  private long seq;
  private int ran;

  /** This scheduler's clock, for code that takes a Guava {@link Ticker}. */
  public final Ticker ticker =
      new Ticker() {
        @Override
        public long read() {
          synchronized (FakeScheduler.this) {
            return nowNanos;
          }
        }
      };

  /** The fake time in nanoseconds: 0 at creation, moved only by {@link #forwardTime}. */
  public synchronized long nanoTime() {
    return nowNanos;
  }

  /** Runs every task due now, including those they submit; returns how many ran. */
  public int runDue() {
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
  public void forwardTime(Duration d) {
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
  public synchronized List<Long> delaysNanos() {
    return List.copyOf(delaysNanos);
  }

  /** Tasks waiting (not cancelled, not run). */
  public synchronized int pending() {
    return (int) queue.stream().filter(t -> !t.cancelled).count();
  }

  /** Tasks run so far. */
  public synchronized int ran() {
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

  /**
   * As {@link #schedule(Runnable, long, TimeUnit)}: an expression lambda such as {@code () ->
   * list.add(x)} lands here. The result is dropped ({@code get()} is not supported); an
   * exception is rethrown to the test's thread, unchecked.
   */
  @Override
  @SuppressWarnings("unchecked")
  public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
    requireNonNull(callable, "callable");
    return (ScheduledFuture<V>)
        schedule(
            () -> {
              try {
                callable.call();
              } catch (RuntimeException e) {
                throw e;
              } catch (Exception e) {
                throw new IllegalStateException(e);
              }
            },
            delay,
            unit);
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
