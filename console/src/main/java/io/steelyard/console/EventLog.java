package io.steelyard.console;

import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * The actions taken through this console, newest first: who (the client's address), when, what,
 * and how it ended. Kept in memory, the last {@value #CAPACITY}; etcd itself keeps no history of
 * who wrote a key. Thread-safe.
 */
final class EventLog {

  static final int CAPACITY = 200;

  /** One action and its outcome. */
  record Event(Instant at, String who, String action, String service, String address,
      boolean ok, String message) {}

  private final ArrayDeque<Event> events = new ArrayDeque<>();

  synchronized void add(Event e) {
    events.addFirst(e);
    while (events.size() > CAPACITY) {
      events.removeLast();
    }
  }

  synchronized List<Event> newestFirst() {
    return new ArrayList<>(events);
  }
}
