package io.steelyard.discovery;

import java.util.EnumSet;
import java.util.Set;

/**
 * Where a {@link PrefixWatcher} is in its life. Every change goes through the watcher's one
 * transition method, which refuses any move this diagram does not draw:
 *
 * <pre>
 *                +------ compacted, etcd went back, periodic re-list ------+
 *                v                                                          |
 *   start --> LISTING ------- listed -------> WATCHING ------- failed ---+  |
 *              |   ^                             ^   |                   |  |
 *       failed |   | retry: a listing, or the    |   +-------------------|--+
 *              v   | 3rd failed watch in a row   | etcd holds our view   |
 *           BACKING_OFF ------- retry -------> RESUMING                  |
 *              ^   ^                             |                       |
 *              |   +-------- check failed -------+                       |
 *              +---------------------------------------------------------+
 *
 *   RESUMING --> LISTING   etcd holds other keys at our revision, has not reached it, or
 *                          compacted it (restored from a snapshot?)
 *   LISTING  --> LISTING   the periodic re-list while a listing is on its way
 *   any      --> CLOSED    close()
 * </pre>
 *
 * <p>"failed" is an error on the watch, no confirmation of it within the listing timeout, or
 * jetcd closing it; the watcher then serves its last view as stale until an attempt succeeds.
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
