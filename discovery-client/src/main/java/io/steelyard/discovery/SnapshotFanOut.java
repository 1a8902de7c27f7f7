package io.steelyard.discovery;

import java.util.concurrent.CopyOnWriteArrayList;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A watcher's listeners and what they were last told: a new view goes to each of them only when
 * it differs from the last one published ({@link Snapshot#sameView}); a newcomer gets the current
 * view (or, before any, the current error) at once. A listener that throws is logged and the
 * others still hear.
 *
 * <p>Threading: {@link #add} and {@link #remove} from any thread (the list is copy-on-write); the
 * rest only from the watcher's serialized executor, which is where listeners are called.
 */
final class SnapshotFanOut {

  private static final Logger logger = LoggerFactory.getLogger(SnapshotFanOut.class);

  private final String service;
  private final WatcherCounters counters;
  private final CopyOnWriteArrayList<WatchListener> listeners = new CopyOnWriteArrayList<>();
  @Nullable private Snapshot published;
  /** When the oldest change not yet published arrived; {@link Snapshot#NO_CHANGE} when none. */
  private long changeReceivedNanos = Snapshot.NO_CHANGE;

  SnapshotFanOut(String service, WatcherCounters counters) {
    this.service = service;
    this.counters = counters;
  }

  void add(WatchListener listener) {
    listeners.add(listener);
  }

  void remove(WatchListener listener) {
    listeners.remove(listener);
  }

  /** The last view published, or null before the first. */
  @Nullable
  Snapshot published() {
    return published;
  }

  /** Instances of the last view published; 0 before the first. */
  int known() {
    return published == null ? 0 : published.instances().size();
  }

  /**
   * Tells {@code listener}, if still added, the current view (not news to it: no propagation delay
   * to measure) or, before any, {@code error} if there is one.
   */
  void greet(WatchListener listener, @Nullable Throwable error) {
    if (!listeners.contains(listener)) {
      return;
    }
    if (published != null) {
      deliver(listener, published.withChangeReceivedNanos(Snapshot.NO_CHANGE));
    } else if (error != null) {
      deliverError(listener, error);
    }
  }

  /** A change from etcd arrived at {@code receivedNanos}: the next publish carries the oldest. */
  void changeArrived(long receivedNanos) {
    if (changeReceivedNanos == Snapshot.NO_CHANGE) {
      changeReceivedNanos = receivedNanos;
    }
  }

  /**
   * Publishes {@code view}, with the arrival of the oldest change it carries: kept for newcomers
   * either way, told to every listener if it is news (a re-list that found nothing new, or an
   * event that changed nothing visible, is not).
   */
  void publish(Snapshot view) {
    Snapshot snapshot = view.withChangeReceivedNanos(changeReceivedNanos);
    changeReceivedNanos = Snapshot.NO_CHANGE;
    counters.instances(snapshot.instances().size());
    boolean news = !snapshot.sameView(published);
    published = snapshot;
    if (!news) {
      return;
    }
    for (WatchListener l : listeners) {
      deliver(l, snapshot);
    }
  }

  /** No view yet, and etcd failed: every listener hears why. */
  void unavailable(Throwable error) {
    for (WatchListener l : listeners) {
      deliverError(l, error);
    }
  }

  private void deliver(WatchListener l, Snapshot snapshot) {
    try {
      l.onSnapshot(snapshot);
    } catch (RuntimeException e) {
      logger.warn("Listener {} of service {} threw on a snapshot", l, service, e);
    }
  }

  private void deliverError(WatchListener l, Throwable err) {
    try {
      l.onUnavailable(err);
    } catch (RuntimeException e) {
      logger.warn("Listener {} of service {} threw on an error", l, service, e);
    }
  }
}
