package io.steelyard.discovery;

import io.steelyard.discovery.EtcdReader.WatchBatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import javax.annotation.Nullable;

/**
 * One watch of a prefix from a revision, as a watcher holds it: every callback hops onto the
 * watcher's scheduler (a response's arrival time is taken before the hop, so queueing counts in
 * the propagation delay); a watchdog reports an error when etcd has not answered on it within
 * the listing timeout, as jetcd's watch waits silently while etcd is down, so silence is the only
 * symptom; and it counts in {@link WatchStats#openEtcdWatches} while open.
 *
 * <p>Threading: opened and closed on the scheduler; the handler is called there.
 */
final class WatchStream {

  /** What the watch reports, on the scheduler. */
  interface Handler {
    void onBatch(WatchBatch batch, long receivedNanos);

    void onCompacted(long compactedRevision);

    void onError(Throwable error);

    void onCompleted();
  }

  private final WatchStats stats;
  @Nullable private Future<?> watchdog;
  @Nullable private EtcdReader.Watching watching;
  private boolean closed;

  private WatchStream(WatchStats stats) {
    this.stats = stats;
  }

  /**
   * Opens a watch of {@code prefix} from {@code fromRevision} on {@code reader}, reporting to
   * {@code handler} for as long as {@code live} says the watcher wants its news (a watch it has
   * left may still deliver some); throws what the reader throws (a closed client does, at once).
   */
  static WatchStream open(
      EtcdReader reader, String prefix, long fromRevision, Scheduler scheduler,
      long confirmTimeoutNanos, WatchStats stats, BooleanSupplier live, Handler handler) {
    WatchStream s = new WatchStream(stats);
    s.watchdog = scheduler.schedule(
        () -> live(live, () -> handler.onError(new TimeoutException("etcd did not confirm the watch within "
            + TimeUnit.NANOSECONDS.toMillis(confirmTimeoutNanos) + " ms"))),
        confirmTimeoutNanos, TimeUnit.NANOSECONDS);
    EtcdReader.Watching w;
    try {
      w = reader.watch(prefix, fromRevision, new EtcdReader.WatchCallbacks() {
        @Override
        public void onBatch(WatchBatch batch) {
          long receivedNanos = scheduler.nanoTime(); // before the hop: queueing counts too
          scheduler.execute(() -> live(live, () -> {
            s.confirmed(); // etcd answered on it: the watchdog is done
            handler.onBatch(batch, receivedNanos);
          }));
        }

        @Override
        public void onCompacted(long compactedRevision) {
          scheduler.execute(() -> live(live, () -> handler.onCompacted(compactedRevision)));
        }

        @Override
        public void onError(Throwable error) {
          scheduler.execute(() -> live(live, () -> handler.onError(error)));
        }

        @Override
        public void onCompleted() {
          scheduler.execute(() -> live(live, handler::onCompleted));
        }
      });
    } catch (RuntimeException e) {
      s.close();
      throw e;
    }
    s.watching = w;
    stats.openEtcdWatches.incrementAndGet();
    return s;
  }

  /** Runs {@code report} while the watcher still wants this watch's news. */
  private static void live(BooleanSupplier live, Runnable report) {
    if (live.getAsBoolean()) {
      report.run();
    }
  }

  private void confirmed() {
    if (watchdog != null) {
      watchdog.cancel(false);
      watchdog = null;
    }
  }

  /** Cancels the watch and its watchdog; idempotent. */
  void close() {
    confirmed();
    if (closed) {
      return;
    }
    closed = true;
    EtcdReader.Watching w = watching;
    watching = null;
    if (w != null) {
      stats.openEtcdWatches.decrementAndGet();
      w.cancel();
    }
  }
}
