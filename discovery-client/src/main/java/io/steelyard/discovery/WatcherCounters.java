package io.steelyard.discovery;

import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.LongConsumer;

/**
 * What one {@link PrefixWatcher} counts for metrics, readable from any thread: re-lists by cause,
 * watch events skipped as older than its view, malformed values, the instances of its last published view, and
 * where the propagation delay of a change goes (the time from its watch response arriving to a
 * channel's balancer holding it).
 *
 * <p>Plain atomics, no metrics library: {@link DiscoveryMetrics} turns them into meters when an
 * application binds one.
 */
final class WatcherCounters {

  private final AtomicLongArray relists = new AtomicLongArray(RelistCause.values().length);
  private final CopyOnWriteArrayList<LongConsumer> propagationSinks = new CopyOnWriteArrayList<>();
  private final AtomicLong staleEventsSkipped = new AtomicLong();
  private final AtomicLong malformed = new AtomicLong();
  private volatile int instances;

  void relisted(RelistCause cause) {
    relists.incrementAndGet(cause.ordinal());
  }

  long relists(RelistCause cause) {
    return relists.get(cause.ordinal());
  }

  /** A watch event at or below the applied revision was dropped (etcd's gRPC proxy may send one). */
  void staleEventSkipped() {
    staleEventsSkipped.incrementAndGet();
  }

  long staleEventsSkipped() {
    return staleEventsSkipped.get();
  }

  /** A value of the prefix could not be decoded. */
  void malformed() {
    malformed.incrementAndGet();
  }

  long malformedCount() {
    return malformed.get();
  }

  void instances(int count) {
    instances = count;
  }

  /** Instances of the last published view; 0 before the first listing. */
  int instances() {
    return instances;
  }

  /** {@code sink} gets each propagation delay, in nanoseconds, until removed. */
  void addPropagationSink(LongConsumer sink) {
    propagationSinks.add(sink);
  }

  void removePropagationSink(LongConsumer sink) {
    propagationSinks.remove(sink);
  }

  /** A balancer holds {@code snapshot} at {@code nowNanos}: the delay since its change came. */
  void propagated(Snapshot snapshot, long nowNanos) {
    long received = snapshot.changeReceivedNanos();
    if (received != Snapshot.NO_CHANGE) {
      propagated(Math.max(0, nowNanos - received));
    }
  }

  void propagated(long nanos) {
    for (LongConsumer sink : propagationSinks) {
      sink.accept(nanos);
    }
  }
}
