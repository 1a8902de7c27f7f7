package io.steelyard.discovery;

import java.util.EnumSet;
import java.util.Set;

/**
 * Where a {@link PrefixWatcher} is in its life. Every change goes through the watcher's one
 * transition method, which refuses any move not drawn here ({@link #canMoveTo}):
 *
 * <pre>
 * start() --> LISTING --listed--> WATCHING
 * WATCHING --error, no confirmation in time, closed by jetcd--> BACKING_OFF
 * WATCHING --compacted, etcd went back in time--> LISTING
 * BACKING_OFF --retry: fewer than N failed watches in a row--> RESUMING
 * BACKING_OFF --retry: a failed listing, the Nth failed watch, a closed watch--> LISTING
 * RESUMING --etcd holds our view at our revision--> WATCHING
 * RESUMING --other keys there, revision not reached or compacted--> LISTING
 * LISTING/RESUMING --etcd failed or refused--> BACKING_OFF
 * LISTING/WATCHING/RESUMING --periodic re-list--> LISTING
 * any --close()--> CLOSED
 * </pre>
 *
 * <p>N is {@value WatcherDefaults#RELIST_AFTER_WATCH_FAILURES}: an error the watcher does not
 * recognise must not trap it in resuming. From its first failure until etcd answers again (a
 * listing, or any watch response) the watcher serves its last view as stale.
 */
enum WatcherState {
  /** Reading the whole prefix (a linearizable range, paged); the view is replaced once it is in. */
  LISTING,
  /** A watch from the applied revision + 1 is open (or waiting for etcd's confirmation). */
  WATCHING,
  /**
   * After a broken watch: asking etcd for the prefix's keys at the applied revision, to resume the
   * watch there only if etcd's history still holds this watcher's view ({@link HistoryCheck}).
   */
  RESUMING,
  /** An attempt failed: the last view is served as stale until the retry (list or resume) is due. */
  BACKING_OFF,
  /** Closed for good: nothing runs any more. */
  CLOSED;

  /** Whether the diagram draws a move from this state to {@code next}. */
  boolean canMoveTo(WatcherState next) {
    return next == CLOSED ? this != CLOSED : successors().contains(next);
  }

  private Set<WatcherState> successors() {
    return switch (this) {
      case LISTING -> EnumSet.of(LISTING, WATCHING, BACKING_OFF);
      case WATCHING -> EnumSet.of(LISTING, BACKING_OFF);
      case RESUMING -> EnumSet.of(LISTING, WATCHING, BACKING_OFF);
      case BACKING_OFF -> EnumSet.of(LISTING, RESUMING);
      case CLOSED -> EnumSet.noneOf(WatcherState.class);
    };
  }
}
