package io.steelyard.discovery;

import java.util.Locale;

/**
 * Why a watcher listed its service again after its first listing: the {@code cause} tag of
 * {@code steelyard_discovery_relists_total} ({@link #tag()}).
 */
enum RelistCause {
  /**
   * The watch fell behind etcd's compaction, or the revision a resume would start from was
   * compacted: the events it missed are gone.
   */
  COMPACTION,
  /** {@value WatcherDefaults#RELIST_AFTER_WATCH_FAILURES} failed watch resumes in a row. */
  WATCH_FAILURES,
  /** jetcd ended the watch without an error. */
  WATCH_CLOSED,
  /**
   * etcd went back in time (restored from a snapshot): it confirmed a watch at a revision or raft
   * term below ours, or, checked before a resume, held other keys at our revision than we did or
   * had not reached it.
   */
  RESTORED,
  /** A listing failed (etcd unreachable or refusing) and is tried again. */
  LIST_FAILED,
  /** The safety-net re-list, every relist interval. */
  PERIODIC;

  String tag() {
    return name().toLowerCase(Locale.ROOT);
  }
}
