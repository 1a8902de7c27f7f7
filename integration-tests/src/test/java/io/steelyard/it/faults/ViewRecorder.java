package io.steelyard.it.faults;

import io.steelyard.discovery.ServiceWatcher;
import io.steelyard.discovery.Snapshot;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.ServiceInstance;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;
import javax.annotation.Nullable;

/**
 * Every view of the service one client's channel was given, with the time it arrived. It joins
 * the channel's own watch: a {@link ServiceWatcher} on the same etcd connection and service
 * shares the one watch of the process (the public contract of {@code ServiceWatcher}), so what
 * it records is what the channel's resolver received.
 */
final class ViewRecorder implements AutoCloseable {

  /** A view and when it arrived ({@link System#nanoTime()}). */
  record Seen(long nanos, Snapshot snapshot) {
    Map<String, Integer> weights() {
      Map<String, Integer> out = new TreeMap<>();
      for (ServiceInstance i : snapshot.instances()) {
        out.put(i.address(), i.weight());
      }
      return out;
    }
  }

  /** An address that left the view: what a DELETE (or a bad value) did to this client. */
  record Removal(long nanos, String address, long revision) {}

  private final String name;
  private final List<Seen> history = new CopyOnWriteArrayList<>();
  private final ServiceWatcher watcher;

  ViewRecorder(String name, EtcdConnection connection, String service) {
    this.name = name;
    this.watcher = ServiceWatcher.builder(connection, service).open(s -> history.add(new Seen(System.nanoTime(), s)));
  }

  String name() {
    return name;
  }

  @Nullable
  Seen latest() {
    return history.isEmpty() ? null : history.get(history.size() - 1);
  }

  /** address → weight of the latest view; empty before the first. */
  Map<String, Integer> weights() {
    Seen s = latest();
    return s == null ? Map.of() : s.weights();
  }

  boolean stale() {
    Seen s = latest();
    return s != null && s.snapshot().isStale();
  }

  long malformed() {
    return watcher.malformedCount();
  }

  /**
   * When the view first satisfied {@code p} at or after {@code sinceNanos} ({@code sinceNanos}
   * itself if the view in force then already did); -1 if not yet.
   */
  long firstAtOrAfter(long sinceNanos, Predicate<Map<String, Integer>> p) {
    Seen inForce = null;
    for (Seen s : history) {
      if (s.nanos() < sinceNanos) {
        inForce = s;
      } else {
        if (inForce != null && p.test(inForce.weights())) {
          return sinceNanos;
        }
        inForce = null;
        if (p.test(s.weights())) {
          return s.nanos();
        }
      }
    }
    return inForce != null && p.test(inForce.weights()) ? sinceNanos : -1;
  }

  /** Addresses that left the view after {@code sinceNanos}, in order. */
  List<Removal> removalsSince(long sinceNanos) {
    List<Removal> out = new ArrayList<>();
    Set<String> previous = null;
    for (Seen s : history) {
      Set<String> now = new HashSet<>(s.weights().keySet());
      if (previous != null && s.nanos() >= sinceNanos) {
        for (String a : previous) {
          if (!now.contains(a)) {
            out.add(new Removal(s.nanos(), a, s.snapshot().revision()));
          }
        }
      }
      previous = now;
    }
    return out;
  }

  /** When the view was first marked stale at or after {@code sinceNanos}; -1 if not yet. */
  long firstStaleAtOrAfter(long sinceNanos) {
    for (Seen s : history) {
      if (s.nanos() >= sinceNanos && s.snapshot().isStale()) {
        return s.nanos();
      }
    }
    return -1;
  }

  /**
   * When the view was fresh (not stale) at or after {@code sinceNanos}: {@code sinceNanos} if the
   * view in force then was, else the first fresh one after; -1 if not yet.
   */
  long firstFreshAtOrAfter(long sinceNanos) {
    Seen inForce = null;
    for (Seen s : history) {
      if (s.nanos() < sinceNanos) {
        inForce = s;
        continue;
      }
      if (inForce != null && !inForce.snapshot().isStale()) {
        return sinceNanos;
      }
      inForce = null;
      if (!s.snapshot().isStale()) {
        return s.nanos();
      }
    }
    return inForce != null && !inForce.snapshot().isStale() ? sinceNanos : -1;
  }

  /** When {@code address} was in the view again after {@code sinceNanos}; -1 if not yet. */
  long firstWithAfter(long sinceNanos, String address) {
    for (Seen s : history) {
      if (s.nanos() > sinceNanos && s.weights().containsKey(address)) {
        return s.nanos();
      }
    }
    return -1;
  }

  /** Total time the view was marked stale after {@code sinceNanos} (up to now if still stale). */
  Duration staleSince(long sinceNanos) {
    long total = 0;
    long staleFrom = -1;
    for (Seen s : history) {
      long at = Math.max(s.nanos(), sinceNanos);
      if (s.snapshot().isStale() && staleFrom < 0) {
        staleFrom = at;
      } else if (!s.snapshot().isStale() && staleFrom >= 0) {
        total += Math.max(0, at - staleFrom);
        staleFrom = -1;
      }
    }
    if (staleFrom >= 0) {
      total += System.nanoTime() - staleFrom;
    }
    return Duration.ofNanos(total);
  }

  @Override
  public void close() {
    watcher.close();
  }
}
