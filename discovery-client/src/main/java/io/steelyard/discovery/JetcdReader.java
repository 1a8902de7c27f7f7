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
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link EtcdReader} over a jetcd {@link Client}: the only class of the watch engine that reads
 * etcd through jetcd. A listing is paged at one revision ({@link PagedListing}), each page through
 * registry-core's etcd-call layer ({@link EtcdCalls}: timeout, failures classified by code). The
 * client belongs to the caller.
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
  private final int pageKeys;

  JetcdReader(Client client, EtcdCalls calls) {
    this(client, calls, PagedListing.DEFAULT_PAGE_KEYS);
  }

  /** @param pageKeys keys per page of a listing, see {@link PagedListing} */
  JetcdReader(Client client, EtcdCalls calls, int pageKeys) {
    this.client = client;
    this.calls = calls;
    this.pageKeys = pageKeys;
  }

  /** Lists in pages at one revision ({@link PagedListing}); each page is one bounded etcd call. */
  @Override
  public CompletableFuture<Listing> list(String prefix) {
    return PagedListing.list(
        (from, end, revision, limit) -> page(prefix, from, end, revision, limit), prefix, pageKeys);
  }

  @Override
  public CompletableFuture<Listing> get(String key) {
    return calls
        .call("get " + key, () -> client.getKVClient().get(bytes(key), GetOption.DEFAULT))
        .thenApply(resp -> {
          List<KeyVersion> keys = new ArrayList<>(1);
          for (KeyValue kv : resp.getKvs()) {
            keys.add(keyVersion(kv));
          }
          return new Listing(resp.getHeader().getRevision(), keys);
        });
  }

  /**
   * The keys at {@code revision}, without values, paged like a listing. etcd answers a range at a
   * revision it compacted and one at a revision it has not reached alike (OUT_OF_RANGE; jetcd
   * makes no {@code CompactedException} of a range's), so that answer is followed by one more
   * request, for etcd's current revision, which tells the two apart.
   */
  @Override
  public CompletableFuture<KeysAt> keysAt(String prefix, long revision) {
    return PagedListing.listAt(
            (from, end, rev, limit) -> page(prefix, from, end, rev, limit, true),
            prefix, revision, pageKeys)
        .thenApply(listing -> {
          Map<String, Long> keys = new HashMap<>();
          for (KeyVersion kv : listing.keys()) {
            keys.put(kv.key(), kv.modRevision());
          }
          return KeysAt.listed(keys);
        })
        .exceptionallyCompose(err -> {
          if (EtcdErrors.classify(err) != RegistryException.Kind.COMPACTED) {
            return CompletableFuture.failedFuture(err);
          }
          return calls
              .call("revision of " + prefix, () -> client.getKVClient().get(
                  bytes(prefix), GetOption.builder().isPrefix(true).withCountOnly(true).build()))
              .thenApply(resp -> resp.getHeader().getRevision() < revision
                  ? KeysAt.notReached()
                  : KeysAt.compacted());
        });
  }

  /** One linearizable range request, which also waits for {@code revision} to be applied. */
  CompletableFuture<PagedListing.Page> page(
      String prefix, byte[] fromKey, byte[] endKey, long revision, int limit) {
    return page(prefix, fromKey, endKey, revision, limit, false);
  }

  private CompletableFuture<PagedListing.Page> page(
      String prefix, byte[] fromKey, byte[] endKey, long revision, int limit, boolean keysOnly) {
    GetOption.Builder option = GetOption.builder()
        .withRange(ByteSequence.from(endKey))
        .withKeysOnly(keysOnly)
        .withLimit(limit);
    if (revision > 0) {
      option.withRevision(revision);
    }
    GetOption range = option.build();
    return calls
        .call("list " + prefix, () -> client.getKVClient().get(ByteSequence.from(fromKey), range))
        .thenApply(resp -> {
          List<KeyValue> kvs = resp.getKvs();
          List<KeyVersion> keys = new ArrayList<>(kvs.size());
          for (KeyValue kv : kvs) {
            keys.add(keyVersion(kv));
          }
          byte[] last = kvs.isEmpty() ? null : kvs.get(kvs.size() - 1).getKey().getBytes();
          return new PagedListing.Page(resp.getHeader().getRevision(), keys, last, resp.isMore());
        });
  }

  @Override
  public Watching watch(String prefix, long fromRevision, WatchCallbacks callbacks) {
    return watch(prefix, true, fromRevision, callbacks);
  }

  @Override
  public Watching watchKey(String key, long fromRevision, WatchCallbacks callbacks) {
    return watch(key, false, fromRevision, callbacks);
  }

  private Watching watch(
      String prefix, boolean isPrefix, long fromRevision, WatchCallbacks callbacks) {
    WatchOption option =
        WatchOption.builder()
            .isPrefix(isPrefix)
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
