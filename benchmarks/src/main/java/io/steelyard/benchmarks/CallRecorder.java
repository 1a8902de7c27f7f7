package io.steelyard.benchmarks;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import io.steelyard.testkit.grpc.CapacityBackend;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The calls of an open-loop load run to {@link CapacityBackend}s (the capacity and two-zone
 * benchmarks), one slot a call: each call's latency counted from the time it was due, not from
 * when the load generator got round to sending it, so a late generator cannot hide a wait; and
 * whether it failed.
 *
 * <pre>{@code
 * CallRecorder calls = new CallRecorder(total);
 * for (int i = 0; i < total; i++) {
 *   long due = start + offsets[i];
 *   // ... park until due ...
 *   calls.send(channel, i, due, deadlineNanos);
 * }
 * calls.awaitAll(giveUpNanos);
 * long[] latency = calls.latency();
 * }</pre>
 *
 * <p>Threading: {@link #send} from the load generator's one thread; the slots are written by the
 * channel's threads as calls finish, and read by the generator's thread after {@link #finished}
 * (or {@link #awaitAll}) has counted them.
 */
public final class CallRecorder {

  private final long[] latencyNanos;
  private final boolean[] failed;
  private final AtomicInteger finished = new AtomicInteger();

  /** Slots for {@code calls} calls, indexed from 0. */
  public CallRecorder(int calls) {
    latencyNanos = new long[calls];
    failed = new boolean[calls];
  }

  /**
   * Sends call {@code index} now, an empty request to {@link CapacityBackend#METHOD} with a
   * deadline {@code deadlineNanos} from now; when it ends, records {@code System.nanoTime() -
   * dueNanos} and whether it failed.
   */
  public void send(Channel channel, int index, long dueNanos, long deadlineNanos) {
    ClientCalls.asyncUnaryCall(
        channel.newCall(
            CapacityBackend.METHOD,
            CallOptions.DEFAULT.withDeadlineAfter(deadlineNanos, TimeUnit.NANOSECONDS)),
        "",
        new StreamObserver<>() {
          @Override
          public void onNext(String value) {}

          @Override
          public void onError(Throwable error) {
            failed[index] = true;
            finish();
          }

          @Override
          public void onCompleted() {
            finish();
          }

          private void finish() {
            latencyNanos[index] = System.nanoTime() - dueNanos;
            finished.incrementAndGet();
          }
        });
  }

  /** How many calls have ended. */
  public int finished() {
    return finished.get();
  }

  /**
   * Waits, polling every 10 ms, until every call has ended or {@code System.nanoTime()} reaches
   * {@code giveUpNanos}.
   */
  public void awaitAll(long giveUpNanos) throws InterruptedException {
    while (finished.get() < latencyNanos.length && System.nanoTime() < giveUpNanos) {
      Thread.sleep(10); // a benchmark driver waiting for its last calls, not a test
    }
  }

  /** Each call's latency in ns from its due time; 0 for a call that has not ended. Not a copy. */
  public long[] latency() {
    return latencyNanos;
  }

  /** Whether each call failed; false for a call that has not ended. Not a copy. */
  public boolean[] failed() {
    return failed;
  }
}
