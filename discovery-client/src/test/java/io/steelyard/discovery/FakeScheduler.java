package io.steelyard.discovery;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/** A scheduler whose time moves only in {@link #forwardNanos}; tasks run on the caller. */
final class FakeScheduler implements Scheduler {

  private final class Task implements ScheduledFuture<Object> {
    final Runnable r;
    final long due;
    final long seq;
    boolean cancelled;
    boolean done;

    Task(Runnable r, long due, long seq) {
      this.r = r;
      this.due = due;
      this.seq = seq;
    }

    @Override
    public long getDelay(TimeUnit unit) {
      return unit.convert(due - now, TimeUnit.NANOSECONDS);
    }

    @Override
    public int compareTo(Delayed o) {
      return Long.compare(getDelay(TimeUnit.NANOSECONDS), o.getDelay(TimeUnit.NANOSECONDS));
    }

    @Override
    public boolean cancel(boolean mayInterrupt) {
      if (done) {
        return false;
      }
      cancelled = true;
      return queue.remove(this);
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
    public Object get() {
      throw new UnsupportedOperationException();
    }

    @Override
    public Object get(long timeout, TimeUnit unit) {
      throw new UnsupportedOperationException();
    }
  }

  private final PriorityQueue<Task> queue =
      new PriorityQueue<>(Comparator.<Task>comparingLong(t -> t.due).thenComparingLong(t -> t.seq));
  private long now;
  private long seq;

  @Override
  public void execute(Runnable task) {
    task.run();
  }

  @Override
  public ScheduledFuture<?> schedule(Runnable task, long delay, TimeUnit unit) {
    Task t = new Task(task, now + unit.toNanos(delay), seq++);
    queue.add(t);
    return t;
  }

  @Override
  public long nanoTime() {
    return now;
  }

  @Override
  public long currentTimeMillis() {
    return TimeUnit.NANOSECONDS.toMillis(now);
  }

  void forwardNanos(long nanos) {
    long target = now + nanos;
    while (!queue.isEmpty() && queue.peek().due <= target) {
      Task t = queue.poll();
      now = t.due;
      t.done = true;
      t.r.run();
    }
    now = target;
  }

  void forward(long amount, TimeUnit unit) {
    forwardNanos(unit.toNanos(amount));
  }

  int pendingTasks() {
    List<Task> live = new ArrayList<>(queue);
    return live.size();
  }
}
