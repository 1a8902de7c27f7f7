package io.steelyard.discovery;

import io.steelyard.discovery.EtcdReader.KeysAt;
import io.steelyard.discovery.EtcdReader.WatchBatch;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether etcd still holds the history a watcher applied, or went back in time (restored from an
 * older snapshot): checked when etcd confirms a watch ({@link #wentBackInTime}) and before a
 * broken watch is resumed ({@link #resumable}).
 *
 * <p>Why a check before resuming at all: etcd restored from an older snapshot takes up the
 * snapshot's revision and, in a single-member or same-configuration cluster, the same member id
 * and often the same raft term; once writes after the restore have carried its revision past
 * ours, a resumed watch is confirmed like any other ({@link #wentBackInTime} sees nothing) and
 * replays a different history from our revision + 1 onto a view etcd never held: keys written or
 * deleted between the snapshot and our revision stay wrong until the periodic re-list.
 *
 * <p>Why this check: resuming is right exactly when etcd's view of the prefix at our revision
 * equals ours, whatever happened elsewhere in the key space, since the watch replays everything
 * after it. A mod revision names one write, so when every key is there at our mod revision and no
 * other key is, the two histories made the same writes to this prefix, or differ only by a write
 * of the same key at the same revision with other bytes (the values are not compared, to keep the
 * check to keys; the periodic re-list bounds that case). A count or the newest key alone (one
 * range with a limit of 1) is cheaper but unsound: two histories that each deleted one different
 * key, or wrote other keys below the same newest one, pass it.
 *
 * <p>Cost: one range of the prefix's keys without values per resume, paged as a listing; a watch
 * that never breaks costs nothing more. A first watch after a listing needs no check.
 *
 * <p>Threading: confined to its watcher's serialized executor.
 */
final class HistoryCheck {

  private static final Logger logger = LoggerFactory.getLogger(HistoryCheck.class);

  private final String service;
  private final String endpoints;
  /** The highest raft term seen in a response header; see {@link #wentBackInTime}. */
  private long raftTerm;

  HistoryCheck(String service, String endpoints) {
    this.service = service;
    this.endpoints = endpoints;
  }

  /** A watch response came: its raft term is the lowest one etcd may show from now on. */
  void saw(WatchBatch batch) {
    raftTerm = Math.max(raftTerm, batch.raftTerm());
  }

  /**
   * Whether etcd, confirming a watch, is behind what this watcher applied ({@code revision}): its
   * current revision below ours, or a raft term below one we saw. etcd accepts a watch from a
   * revision it has not reached and then waits silently until it gets there, so after a restore
   * from an older snapshot (etcd 3.4 restores the snapshot's revision) a resumed watch would skip
   * every change until then. A member that merely lags makes us re-list too, which is harmless:
   * the listing is a linearizable read.
   */
  boolean wentBackInTime(WatchBatch batch, long revision) {
    long theirs = batch.revision();
    long term = batch.raftTerm();
    if (term == 0 && batch.memberId() == 0) {
      // etcd's gRPC proxy, adding this watch to a watch it already holds, makes up the created
      // notification with only a revision (ours + 1); no member or term to compare.
      return theirs < revision;
    }
    if (theirs >= revision && term >= raftTerm) {
      return false;
    }
    logger.warn(
        "etcd at {} is behind what service {} was watched at (revision {} < {} or raft term {} < {});"
            + " restored from a snapshot? Re-listing", endpoints, service, theirs, revision, term, raftTerm);
    raftTerm = term; // a restored cluster counts its terms afresh
    return true;
  }

  /**
   * Judges etcd's keys of the prefix at {@code at}, the revision {@code table} was applied to:
   * null when the watch may resume there, else why to re-list instead.
   */
  @Nullable
  RelistCause resumable(KeysAt keys, long at, InstanceTable table) {
    switch (keys.outcome()) {
      case LISTED -> {
        if (table.holdsExactly(keys.modRevisions())) {
          return null;
        }
        logger.warn(
            "etcd at {} holds other keys of service {} at revision {} than this watcher applied"
                + " ({} there, {} here); restored from a snapshot? Re-listing",
            endpoints, service, at, keys.modRevisions().size(), table.size());
        return RelistCause.RESTORED;
      }
      case NOT_REACHED -> {
        logger.warn(
            "etcd at {} has not reached revision {} that service {} was watched at; restored from"
                + " a snapshot? Re-listing", endpoints, at, service);
        return RelistCause.RESTORED;
      }
      case COMPACTED -> {
        logger.info("Revision {} of service {} at {} was compacted while the watch was down;"
            + " re-listing", at, service, endpoints);
        return RelistCause.COMPACTION;
      }
    }
    throw new AssertionError(keys.outcome());
  }
}
