package io.steelyard.agent;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.steelyard.registry.internal.Backoff;
import io.steelyard.registry.internal.EtcdCalls;
import io.steelyard.registry.internal.EtcdErrors;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches a registration's own key, so the registration learns when an operator deletes it or
 * rewrites its weight. One key, one revision at a time: not the discovery client's prefix
 * watcher.
 *
 * <p>The watch starts from the revision after the registration's put, with {@code
 * requireLeader} so that a member cut off from its cluster ends the watch instead of silently
 * missing a delete. When the watch ends (an error jetcd does not resume from, or completion), the
 * key is read again: gone means {@link Listener#onKeyGone()}, present means a new watch from the
 * read's revision + 1, a failed read is retried with backoff.
 *
 * <p>Threading: confined to the registration's serial executor; jetcd's callbacks only post to
 * it. Each instance watches for one lease; {@link #close()} makes every late callback a no-op.
 */
final class KeyWatch {

  /** Told about the key, on the serial executor. */
  interface Listener {
    /** The key was written (by anyone). */
    void onKeyWritten(KeyValue kv);

    /** The key is gone (a delete event, or a read after the watch ended found nothing). */
    void onKeyGone();
  }

  /** The retry delay stops growing after this many failed reads. */
  private static final int MAX_BACKOFF_ATTEMPT = 10;

  private static final Logger logger = LoggerFactory.getLogger(KeyWatch.class);

  private final Client client;
  private final ByteSequence key;
  private final String keyText;
  private final EtcdCalls calls;
  private final Executor serial;
  private final ScheduledExecutorService scheduler;
  private final Backoff backoff;
  private final Listener listener;

  private boolean closed;
  /** Identifies the current watcher; bumped when it is replaced, since closing one completes it. */
  private long seq;
  private int failedReads;
  @Nullable private Watch.Watcher watcher;
  @Nullable private Future<?> retry;

  KeyWatch(
      Client client,
      ByteSequence key,
      String keyText,
      EtcdCalls calls,
      Executor serial,
      ScheduledExecutorService scheduler,
      Backoff backoff,
      Listener listener) {
    this.client = client;
    this.key = key;
    this.keyText = keyText;
    this.calls = calls;
    this.serial = serial;
    this.scheduler = scheduler;
    this.backoff = backoff;
    this.listener = listener;
  }

  /** Watches from {@code fromRevision} on. */
  void start(long fromRevision) {
    if (closed) {
      return;
    }
    long s = ++seq;
    watcher =
        client.getWatchClient()
            .watch(
                key,
                WatchOption.builder().withRevision(fromRevision).withRequireLeader(true).build(),
                Watch.listener(
                    r -> {
                      List<WatchEvent> events = r.getEvents();
                      serial.execute(() -> onEvents(s, events));
                    },
                    t -> serial.execute(() -> onEnded(s, t)),
                    () -> serial.execute(() -> onEnded(s, null))));
  }

  /** Stops watching; nothing it started runs any more. */
  void close() {
    closed = true;
    if (retry != null) {
      retry.cancel(false);
      retry = null;
    }
    closeWatcher();
  }

  private void onEvents(long s, List<WatchEvent> events) {
    if (closed || s != seq) {
      return;
    }
    failedReads = 0;
    for (WatchEvent event : events) {
      switch (event.getEventType()) {
        case DELETE -> {
          listener.onKeyGone();
          return;
        }
        case PUT -> listener.onKeyWritten(event.getKeyValue());
        default -> { }
      }
    }
  }

  private void onEnded(long s, @Nullable Throwable cause) {
    if (closed || s != seq) {
      return;
    }
    closeWatcher();
    logger.debug(
        "Watch of {} ended ({}); reading the key again",
        keyText, cause == null ? "completed" : EtcdErrors.unwrap(cause).getMessage());
    read(seq);
  }

  private void read(long s) {
    retry = null;
    if (closed || s != seq) {
      return;
    }
    calls.call("get " + keyText, () -> client.getKVClient().get(key))
        .whenCompleteAsync((r, t) -> afterRead(s, r, t), serial);
  }

  private void afterRead(long s, @Nullable GetResponse r, @Nullable Throwable t) {
    if (closed || s != seq) {
      return;
    }
    if (t != null) {
      long delayNanos = backoff.delayNanos(Math.min(failedReads++, MAX_BACKOFF_ATTEMPT));
      logger.info(
          "Cannot watch {} again yet; retrying in {} ms: {}",
          keyText, TimeUnit.NANOSECONDS.toMillis(delayNanos), EtcdErrors.unwrap(t).getMessage());
      retry =
          scheduler.schedule(() -> serial.execute(() -> read(s)), delayNanos, TimeUnit.NANOSECONDS);
      return;
    }
    if (r.getKvs().isEmpty()) {
      listener.onKeyGone();
      return;
    }
    start(r.getHeader().getRevision() + 1);
  }

  private void closeWatcher() {
    seq++; // jetcd completes a watcher it closes; that must not look like the watch ending
    if (watcher != null) {
      try {
        watcher.close();
      } catch (RuntimeException e) {
        logger.debug("Closing the watch of {} failed", keyText, e);
      }
      watcher = null;
    }
  }
}
