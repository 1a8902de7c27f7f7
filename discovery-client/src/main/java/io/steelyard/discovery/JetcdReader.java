package io.steelyard.discovery;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.common.exception.CompactedException;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.etcd.jetcd.watch.WatchResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link EtcdReader} over a jetcd {@link Client}: the only class of the watch engine that knows
 * jetcd. It owns the client and closes it in {@link #close()}.
 *
 * <p>jetcd 0.8.6 keeps retrying a watch on UNAVAILABLE after reporting the error to the listener,
 * and closes it for good on compaction and most other errors; this adapter reports the first
 * ending (error, compaction or completion) and drops whatever the stream says after it, so the
 * engine owns every retry.
 */
final class JetcdReader implements EtcdReader {

  private static final Logger logger = LoggerFactory.getLogger(JetcdReader.class);

  private final Client client;

  JetcdReader(Client client) {
    this.client = client;
  }

  @Override
  public CompletableFuture<Listing> list(String prefix) {
    return client
        .getKVClient()
        .get(bytes(prefix), GetOption.builder().isPrefix(true).build())
        .thenApply(resp -> {
          List<KeyVersion> keys = new ArrayList<>(resp.getKvs().size());
          for (KeyValue kv : resp.getKvs()) {
            keys.add(keyVersion(kv));
          }
          return new Listing(resp.getHeader().getRevision(), keys);
        });
  }

  @Override
  public Watching watch(String prefix, long fromRevision, WatchCallbacks callbacks) {
    WatchOption option =
        WatchOption.builder()
            .isPrefix(true)
            .withRevision(fromRevision)
            .withRequireLeader(true)
            .withCreateNotify(true)
            .build();
    AtomicBoolean over = new AtomicBoolean();
    Watch.Watcher watcher =
        client
            .getWatchClient()
            .watch(
                bytes(prefix),
                option,
                Watch.listener(
                    resp -> {
                      if (!over.get()) {
                        callbacks.onBatch(batch(resp));
                      }
                    },
                    err -> {
                      if (over.compareAndSet(false, true)) {
                        CompactedException compacted = compacted(err);
                        if (compacted != null) {
                          callbacks.onCompacted(compacted.getCompactedRevision());
                        } else {
                          callbacks.onError(err);
                        }
                      }
                    },
                    () -> {
                      if (over.compareAndSet(false, true)) {
                        callbacks.onCompleted();
                      }
                    }));
    return () -> {
      over.set(true);
      try {
        watcher.close();
      } catch (RuntimeException e) {
        logger.debug("Closing the watch of {} failed", prefix, e);
      }
    };
  }

  @Override
  public void close() {
    client.close();
  }

  private static WatchBatch batch(WatchResponse resp) {
    List<Event> events = new ArrayList<>(resp.getEvents().size());
    for (WatchEvent event : resp.getEvents()) {
      KeyValue kv = event.getKeyValue();
      switch (event.getEventType()) {
        case PUT -> events.add(new Event(false, keyVersion(kv)));
        case DELETE -> events.add(Event.delete(
            kv.getKey().toString(StandardCharsets.UTF_8), kv.getModRevision()));
        default -> logger.debug("Ignoring an unrecognized watch event at revision {}", kv.getModRevision());
      }
    }
    return new WatchBatch(
        resp.getHeader().getMemberId(), resp.getHeader().getRevision(), resp.isProgressNotify(), events);
  }

  private static KeyVersion keyVersion(KeyValue kv) {
    return new KeyVersion(
        kv.getKey().toString(StandardCharsets.UTF_8), kv.getValue().getBytes(), kv.getModRevision());
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }

  @Nullable
  private static CompactedException compacted(Throwable err) {
    for (Throwable t = err; t != null; t = t.getCause()) {
      if (t instanceof CompactedException c) {
        return c;
      }
    }
    return null;
  }
}
