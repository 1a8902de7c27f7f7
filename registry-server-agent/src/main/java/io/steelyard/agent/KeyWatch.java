package io.steelyard.agent;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Response;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import io.steelyard.registry.internal.Backoff;
import io.steelyard.registry.internal.EtcdCalls;
import io.steelyard.registry.internal.EtcdErrors;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Watches a registration's own key, so the registration learns when an operator deletes it or
 * rewrites its weight, and when etcd went back in time under it. One key, one revision at a
 * time: not the discovery client's prefix watcher.
 *
 * <p>The watch starts from the revision after the registration's put, with {@code
 * requireLeader} so that a member cut off from its cluster ends the watch instead of silently
 * missing a delete. When the watch ends (any error, or completion), the key is read again: gone
 * means {@link Listener#onKeyGone()}, present means a new watch from the read's revision + 1, a
 * failed read is retried with backoff. Each read and watch takes the registration's current
 * client, so the watch follows a client replaced by a fresh one.
 *
 * <p><b>etcd behind the watch.</b> After a restore from an older snapshot, etcd 3.4 is at the
 * snapshot's revision, accepts a watch from a revision it has not reached, and stays silent until
 * it gets there; its value of the key is the snapshot's. So every response header (the watch's
 * created notification included) and every read is checked as discovery's {@code PrefixWatcher}
 * does: a revision below one already seen, or a raft term below one already seen (a restored
 * cluster counts terms afresh), means etcd went back. A watch confirmed by such a member is
 * dropped and the key read again (a linearizable read: a member that merely lags cannot fool it);
 * a read that is itself behind (or that shows the key at a mod revision below one seen before,
 * which one history never does) goes to {@link Listener#onEtcdWentBack} with what etcd holds now.
 *
 * <p>Threading: confined to the registration's serial executor; jetcd's callbacks only post to
 * it. Each instance watches for one lease; {@link #close()} makes every late callback a no-op.
 */
final class KeyWatch {

  /** Told about the key, on the serial executor. */
  interface Listener {
    /** The key was written (by anyone), or a read found it. */
    void onKeyWritten(KeyValue kv);

    /** The key is gone (a delete event, or a read after the watch ended found nothing). */
    void onKeyGone();

    /**
     * etcd is behind what was seen before (restored from an older snapshot): {@code kv} is what it
     * holds now, {@code null} if nothing. The watch goes on from etcd's current revision.
     */
    void onEtcdWentBack(@Nullable KeyValue kv);
  }

  /** The retry delay stops growing after this many failed reads. */
  private static final int MAX_BACKOFF_ATTEMPT = 10;

  private static final Logger logger = LoggerFactory.getLogger(KeyWatch.class);

  private final Supplier<Client> clients;
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
  /** The highest revision etcd showed us (a header, an event); etcd below it went back. */
  private long revision;
  /** The highest raft term etcd showed us; etcd below it was restored. */
  private long raftTerm;
  /** The key's highest mod revision seen; a key's mod revision never goes down in one history. */
  private long keyModRevision;
  @Nullable private Watch.Watcher watcher;
  @Nullable private Future<?> retry;

  KeyWatch(
      Supplier<Client> clients,
      ByteSequence key,
      String keyText,
      EtcdCalls calls,
      Executor serial,
      ScheduledExecutorService scheduler,
      Backoff backoff,
      Listener listener) {
    this.clients = clients;
    this.key = key;
    this.keyText = keyText;
    this.calls = calls;
    this.serial = serial;
    this.scheduler = scheduler;
    this.backoff = backoff;
    this.listener = listener;
  }

  /** Watches the key written at {@code putRevision}, from the revision after it. */
  void start(long putRevision) {
    keyModRevision = Math.max(keyModRevision, putRevision);
    watchFrom(putRevision + 1);
  }

  /** Watches from {@code fromRevision} on; etcd has shown us {@code fromRevision - 1} already. */
  private void watchFrom(long fromRevision) {
    if (closed) {
      return;
    }
    revision = Math.max(revision, fromRevision - 1);
    long s = ++seq;
    try {
      watcher =
          clients.get().getWatchClient()
              .watch(
                  key,
                  WatchOption.builder()
                      .withRevision(fromRevision)
                      .withRequireLeader(true)
                      .withCreateNotify(true)
                      .build(),
                  Watch.listener(
                      r -> serial.execute(() -> onResponse(s, r)),
                      t -> serial.execute(() -> onEnded(s, t)),
                      () -> serial.execute(() -> onEnded(s, null))));
    } catch (RuntimeException e) {
      // jetcd throws at once for a closed client (replaced meanwhile): read with the current one.
      serial.execute(() -> onEnded(s, e));
    }
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

  private void onResponse(long s, WatchResponse r) {
    if (closed || s != seq) {
      return;
    }
    if (r.isCreatedNotify()) {
      if (behind(r.getHeader())) {
        logger.info(
            "etcd confirmed the watch of {} at revision {} (term {}), behind revision {} (term {})"
                + " seen before; reading the key again",
            keyText, r.getHeader().getRevision(), r.getHeader().getRaftTerm(), revision, raftTerm);
        closeWatcher();
        read(seq);
      } else {
        saw(r.getHeader());
      }
      return;
    }
    saw(r.getHeader());
    failedReads = 0;
    for (WatchEvent event : r.getEvents()) {
      revision = Math.max(revision, event.getKeyValue().getModRevision());
      keyModRevision = Math.max(keyModRevision, event.getKeyValue().getModRevision());
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
    Client client = clients.get();
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
    failedReads = 0;
    KeyValue kv = r.getKvs().isEmpty() ? null : r.getKvs().get(0);
    if (behind(r.getHeader()) || (kv != null && kv.getModRevision() < keyModRevision)) {
      logger.warn(
          "etcd is at revision {} (term {}), behind revision {} (term {}) seen before: restored from"
              + " an older snapshot? {} is {} there",
          r.getHeader().getRevision(), r.getHeader().getRaftTerm(), revision, raftTerm, keyText,
          kv == null ? "absent" : "at mod revision " + kv.getModRevision() + " (was " + keyModRevision + ")");
      // A restored cluster is the new reference, revisions and term alike.
      revision = r.getHeader().getRevision();
      raftTerm = r.getHeader().getRaftTerm();
      keyModRevision = kv == null ? 0 : kv.getModRevision();
      watchFrom(revision + 1);
      listener.onEtcdWentBack(kv);
      return;
    }
    saw(r.getHeader());
    if (kv == null) {
      listener.onKeyGone();
      return;
    }
    keyModRevision = Math.max(keyModRevision, kv.getModRevision());
    watchFrom(r.getHeader().getRevision() + 1);
    listener.onKeyWritten(kv);
  }

  /** Whether {@code header} shows etcd behind what it showed before. */
  private boolean behind(Response.Header header) {
    return header.getRevision() < revision || header.getRaftTerm() < raftTerm;
  }

  private void saw(Response.Header header) {
    revision = Math.max(revision, header.getRevision());
    raftTerm = Math.max(raftTerm, header.getRaftTerm());
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
