package io.steelyard.discovery;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The counters of one {@link WatchRegistry}, updated by it and by its watchers; read from any
 * thread ({@link DiscoveryStats} shows those of the process-wide registry).
 */
final class WatchStats {

  final AtomicInteger activeWatches = new AtomicInteger();
  final AtomicInteger openEtcdWatches = new AtomicInteger();
  final AtomicInteger etcdClients = new AtomicInteger();
  final AtomicInteger staleWatches = new AtomicInteger();
  final AtomicLong malformedValues = new AtomicLong();

  int activeWatches() {
    return activeWatches.get();
  }

  int openEtcdWatches() {
    return openEtcdWatches.get();
  }

  int etcdClients() {
    return etcdClients.get();
  }

  int staleWatches() {
    return staleWatches.get();
  }

  long malformedValues() {
    return malformedValues.get();
  }
}
