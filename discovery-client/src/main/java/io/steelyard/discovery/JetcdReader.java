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
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.internal.EtcdCalls;
import io.steelyard.registry.internal.EtcdErrors;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link EtcdReader} over a jetcd {@link Client}: the only class of the watch engine that reads
 * etcd through jetcd. The listing goes through registry-core's etcd-call layer ({@link
 * EtcdCalls}: timeout, failures classified by code). The client belongs to the caller.
 *
 * <p>jetcd 0.8.6 keeps retrying a watch on UNAVAILABLE after reporting the error to the listener,
 * and closes it for good on compaction and most other errors; this adapter reports the first
 * ending (error, compaction or completion) and drops whatever the stream says after it, so the
 * engine owns every retry.
 */
final class JetcdReader implements EtcdReader {

  private static final Logger logger = LoggerFactory.getLogger(JetcdReader.class);

  private final Client client;
  private final EtcdCalls calls;

  JetcdReader(Client client, EtcdCalls calls) {
    this.client = client;
    this.calls = calls;
  }

  @Override
  public CompletableFuture<Listing> list(String prefix) {
    GetOption everyKey = GetOption.builder().isPrefix(true).build();
    return calls
        .call("list " + prefix, () -> client.getKVClient().get(bytes(prefix), everyKey))
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
                        // Classified by code (OUT_OF_RANGE) in the etcd-call layer; jetcd's
                        // CompactedException only adds the compacted revision.
                        if (EtcdErrors.classify(err) == RegistryException.Kind.COMPACTED) {
                          CompactedException c = compacted(err);
                          callbacks.onCompacted(c == null ? -1 : c.getCompactedRevision());
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
        resp.getHeader().getMemberId(),
        resp.getHeader().getRevision(),
        resp.getHeader().getRaftTerm(),
        resp.isCreatedNotify(),
        resp.isProgressNotify(),
        events);
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
