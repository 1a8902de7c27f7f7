package io.steelyard.discovery;

import static io.steelyard.discovery.WatcherState.BACKING_OFF;
import static io.steelyard.discovery.WatcherState.CLOSED;
import static io.steelyard.discovery.WatcherState.LISTING;
import static io.steelyard.discovery.WatcherState.RESUMING;
import static io.steelyard.discovery.WatcherState.WATCHING;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.EnumSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The moves the diagram in {@link WatcherState} draws, and no other. */
class WatcherStateTest {

  private static Set<WatcherState> movesFrom(WatcherState from) {
    Set<WatcherState> to = EnumSet.noneOf(WatcherState.class);
    for (WatcherState next : WatcherState.values()) {
      if (from.canMoveTo(next)) {
        to.add(next);
      }
    }
    return to;
  }

  @Test
  void aListingIsFollowedByAWatchOrABackoffOrAnotherListing() {
    assertThat(movesFrom(LISTING)).containsExactlyInAnyOrder(LISTING, WATCHING, BACKING_OFF, CLOSED);
  }

  @Test
  void aWatchEndsInABackoffOrAListingNeverInAResumeWithoutBackingOff() {
    assertThat(movesFrom(WATCHING)).containsExactlyInAnyOrder(LISTING, BACKING_OFF, CLOSED);
  }

  @Test
  void aResumeWatchesListsOrBacksOff() {
    assertThat(movesFrom(RESUMING)).containsExactlyInAnyOrder(LISTING, WATCHING, BACKING_OFF, CLOSED);
  }

  @Test
  void aBackoffEndsInAListingOrAResumeNeverInAWatchDirectly() {
    assertThat(movesFrom(BACKING_OFF)).containsExactlyInAnyOrder(LISTING, RESUMING, CLOSED);
  }

  @Test
  void closedGoesNowhere() {
    assertThat(movesFrom(CLOSED)).isEmpty();
  }

  @ParameterizedTest
  @EnumSource(value = WatcherState.class, names = "CLOSED", mode = EnumSource.Mode.EXCLUDE)
  void everyOpenStateCanClose(WatcherState from) {
    assertThat(from.canMoveTo(CLOSED)).isTrue();
  }
}
