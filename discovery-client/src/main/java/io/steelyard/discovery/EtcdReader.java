package io.steelyard.discovery;

import static java.util.Objects.requireNonNull;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The etcd reads a {@link PrefixWatcher} is built on, in the engine's own small types: list a
 * prefix, watch a prefix (or one key) from a revision, and read a prefix's keys at a past revision. This is
 * the seam between the engine and jetcd: {@link JetcdReader} implements it over a jetcd {@code Client} (and is covered against a real
 * etcd by the integration tests); unit tests script it to drive every recovery path under fake
 * time. A reader does not own its client: {@link RenewingClient} does.
 *
 * <p>Threading: methods may be called from any thread; futures and callbacks complete on the
 * implementation's threads, so the engine hops onto its own executor before touching state.
 */
interface EtcdReader {

  /**
   * Lists every key under {@code prefix} (which ends with {@code /}). The future fails when etcd
   * cannot be reached, refuses, or does not answer within the reader's timeout; production fails
   * it with a classified {@link io.steelyard.registry.RegistryException}.
   */
  CompletableFuture<Listing> list(String prefix);

  /**
   * Reads the one key {@code key}: a listing of it alone (no key when it does not exist) at
   * etcd's current revision. Fails as {@link #list} does.
   */
  CompletableFuture<Listing> get(String key);

  /**
   * Watches every key under {@code prefix} from {@code fromRevision}, with etcd's
   * require-leader (a member cut off from the quorum fails the watch instead of going silent) and
   * created-notify (the first batch, with no event, confirms the watch). Reports at most one of
   * {@link WatchCallbacks#onCompacted}, {@link WatchCallbacks#onError} or {@link
   * WatchCallbacks#onCompleted}, and nothing after it; the caller still {@linkplain
   * Watching#cancel() cancels} the watch to release it.
   */
  Watching watch(String prefix, long fromRevision, WatchCallbacks callbacks);

  /**
   * Watches the one key {@code key} from {@code fromRevision}, as {@link #watch} watches a
   * prefix. etcd checks a watch's permission over its whole range, so a role that may read only
   * {@code key} may open this watch but not a prefix watch of the same bytes.
   */
  Watching watchKey(String key, long fromRevision, WatchCallbacks callbacks);

  /**
   * The keys under {@code prefix} as etcd held them at {@code revision} (a past one), each with
   * its mod revision and no value: what a watcher compares its view with before resuming a watch
   * from {@code revision + 1} (see {@link PrefixWatcher}). Completes with {@link
   * KeysAt#compacted()} when etcd compacted that revision, and {@link KeysAt#notReached()} when
   * etcd has not reached it (it went back in time); the future fails, as a listing's does, when
   * etcd cannot be reached or refuses.
   */
  CompletableFuture<KeysAt> keysAt(String prefix, long revision);

  /** etcd's answer to {@link #keysAt}: each key's mod revision then, or why it has none. */
  record KeysAt(Outcome outcome, Map<String, Long> modRevisions) {
    /** Whether etcd could answer for the revision asked. */
    enum Outcome {
      LISTED,
      COMPACTED,
      NOT_REACHED
    }

    public KeysAt {
      requireNonNull(outcome, "outcome");
      modRevisions = Map.copyOf(modRevisions);
    }

    static KeysAt listed(Map<String, Long> modRevisions) {
      return new KeysAt(Outcome.LISTED, modRevisions);
    }

    static KeysAt compacted() {
      return new KeysAt(Outcome.COMPACTED, Map.of());
    }

    static KeysAt notReached() {
      return new KeysAt(Outcome.NOT_REACHED, Map.of());
    }
  }

  /** A key as stored: its UTF-8 name, its raw value, its mod revision. */
  record KeyVersion(String key, byte[] value, long modRevision) {
    public KeyVersion {
      requireNonNull(key, "key");
      requireNonNull(value, "value");
    }
  }

  /** Every key under a prefix at one revision (the response header's). */
  record Listing(long revision, List<KeyVersion> keys) {
    public Listing {
      keys = List.copyOf(keys);
    }
  }

  /** One change; a delete carries the key, an empty value and the revision of the delete. */
  record Event(boolean delete, KeyVersion kv) {
    static Event put(String key, byte[] value, long modRevision) {
      return new Event(false, new KeyVersion(key, value, modRevision));
    }

    static Event delete(String key, long revision) {
      return new Event(true, new KeyVersion(key, new byte[0], revision));
    }
  }

  /**
   * One watch response: the answering member, the header revision and raft term, whether it is
   * the created notification or a progress notification, and its events in revision order (none
   * for the created notification).
   */
  record WatchBatch(
      long memberId,
      long revision,
      long raftTerm,
      boolean created,
      boolean progressNotify,
      List<Event> events) {
    public WatchBatch {
      events = List.copyOf(events);
    }
  }

  /** Where a watch reports; called on the reader's threads. */
  interface WatchCallbacks {
    void onBatch(WatchBatch batch);

    /**
     * etcd compacted past the requested revision: events from there on are gone. The compacted
     * revision, or -1 when etcd did not say.
     */
    void onCompacted(long compactedRevision);

    void onError(Throwable error);

    /** The watch ended without an error the reader could see. */
    void onCompleted();
  }

  /** An open watch. */
  interface Watching {
    /** Stops the watch; idempotent, never throws. */
    void cancel();
  }
}
