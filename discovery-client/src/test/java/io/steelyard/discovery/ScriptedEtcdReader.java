package io.steelyard.discovery;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * A fake of our {@link EtcdReader} seam (not of jetcd): it records every listing, watch and
 * keysAt the engine asks for, and the test answers them — complete a listing, answer a keysAt,
 * confirm a watch, deliver events, fail it, compact it — in exactly the order it wants. Calls
 * come from the test thread, which with {@link InlineFakeScheduler} is also the watcher's thread.
 */
final class ScriptedEtcdReader implements EtcdReader {

  /** One watch the engine opened. */
  static final class ScriptedWatch implements Watching {
    final String prefix;
    /** Whether it watches {@link #prefix} as one key ({@link #watchKey}), not as a prefix. */
    final boolean exactKey;
    final long fromRevision;
    private final WatchCallbacks callbacks;
    boolean cancelled;

    ScriptedWatch(String prefix, boolean exactKey, long fromRevision, WatchCallbacks callbacks) {
      this.prefix = prefix;
      this.exactKey = exactKey;
      this.fromRevision = fromRevision;
      this.callbacks = callbacks;
    }

    @Override
    public void cancel() {
      cancelled = true;
    }

    /** etcd's created notification: a batch with no event. */
    void confirm(long memberId, long revision) {
      confirm(memberId, revision, 1);
    }

    /** The created notification from a member at {@code revision} in raft term {@code term}. */
    void confirm(long memberId, long revision, long term) {
      callbacks.onBatch(new WatchBatch(memberId, revision, term, true, false, List.of()));
    }

    void events(long revision, Event... events) {
      callbacks.onBatch(new WatchBatch(1, revision, 1, false, false, List.of(events)));
    }

    void progress(long revision) {
      callbacks.onBatch(new WatchBatch(1, revision, 1, false, true, List.of()));
    }

    void compacted(long compactedRevision) {
      callbacks.onCompacted(compactedRevision);
    }

    void fail(Throwable error) {
      callbacks.onError(error);
    }

    void complete() {
      callbacks.onCompleted();
    }
  }

  /** One {@link #keysAt} the engine asked for. */
  record KeysAtRequest(String prefix, long revision, CompletableFuture<KeysAt> answer) {}

  final String name;
  final List<CompletableFuture<Listing>> lists = new ArrayList<>();
  final List<ScriptedWatch> watches = new ArrayList<>();
  final List<KeysAtRequest> keysAts = new ArrayList<>();

  ScriptedEtcdReader(String name) {
    this.name = name;
  }

  @Override
  public CompletableFuture<Listing> list(String prefix) {
    CompletableFuture<Listing> f = new CompletableFuture<>();
    lists.add(f);
    return f;
  }

  /** A single-key read, answered like a listing (it is one, of one key or none). */
  @Override
  public CompletableFuture<Listing> get(String key) {
    return list(key);
  }

  @Override
  public Watching watch(String prefix, long fromRevision, WatchCallbacks callbacks) {
    ScriptedWatch w = new ScriptedWatch(prefix, false, fromRevision, callbacks);
    watches.add(w);
    return w;
  }

  @Override
  public Watching watchKey(String key, long fromRevision, WatchCallbacks callbacks) {
    ScriptedWatch w = new ScriptedWatch(key, true, fromRevision, callbacks);
    watches.add(w);
    return w;
  }

  @Override
  public CompletableFuture<KeysAt> keysAt(String prefix, long revision) {
    KeysAtRequest r = new KeysAtRequest(prefix, revision, new CompletableFuture<>());
    keysAts.add(r);
    return r.answer();
  }

  /** The last keysAt asked for, which must still be unanswered. */
  KeysAtRequest pendingKeysAt() {
    assertThat(keysAts).as("%s: keysAt asked for", name).isNotEmpty();
    KeysAtRequest r = keysAts.get(keysAts.size() - 1);
    assertThat(r.answer()).as("%s: last keysAt", name).isNotDone();
    return r;
  }

  /** etcd's keys at a revision: key, mod revision, key, mod revision, ... */
  static KeysAt keysAt(Object... keyThenModRevision) {
    Map<String, Long> keys = new HashMap<>();
    for (int i = 0; i < keyThenModRevision.length; i += 2) {
      keys.put((String) keyThenModRevision[i], ((Number) keyThenModRevision[i + 1]).longValue());
    }
    return KeysAt.listed(keys);
  }

  /** The last listing asked for, which must still be unanswered. */
  CompletableFuture<Listing> pendingList() {
    assertThat(lists).as("%s: listings asked for", name).isNotEmpty();
    CompletableFuture<Listing> f = lists.get(lists.size() - 1);
    assertThat(f).as("%s: last listing", name).isNotDone();
    return f;
  }

  /** The last watch opened, which must still be open. */
  ScriptedWatch openWatch() {
    assertThat(watches).as("%s: watches opened", name).isNotEmpty();
    ScriptedWatch w = watches.get(watches.size() - 1);
    assertThat(w.cancelled).as("%s: last watch cancelled", name).isFalse();
    return w;
  }

  static KeyVersion kv(String key, String value, long modRevision) {
    return new KeyVersion(key, value.getBytes(UTF_8), modRevision);
  }

  static Listing listing(long revision, KeyVersion... keys) {
    return new Listing(revision, List.of(keys));
  }

  static Event put(String key, String value, long modRevision) {
    return Event.put(key, value.getBytes(UTF_8), modRevision);
  }

  @Override
  public String toString() {
    return name;
  }
}
