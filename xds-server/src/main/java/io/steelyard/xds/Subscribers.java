package io.steelyard.xds;

import static java.util.Objects.requireNonNull;

import io.envoyproxy.envoy.config.core.v3.Node;
import io.steelyard.registry.Localities;
import io.steelyard.registry.Validation;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Who asks for what, per zone: each ADS stream's zone (from the node of its first request, the
 * only one C-core and grpc-js send it in) and the services whose assignments it subscribes to.
 * From that, the demand of a service: how many nodes naming each zone subscribe to it, each node
 * counted once however many streams and calls it has.
 *
 * <p>The zone is {@code node.locality.zone}; a node naming none is zone-less, and so is one whose
 * zone is not a valid zone name (logged once per node). The region is not part of the group:
 * zone names are taken to be unique, as the Java balancer takes them.
 *
 * <p>Threading: called on gRPC's threads; the listener is called under this object's lock and
 * must only hand the work on.
 */
final class Subscribers {

  /** Told of changes; called under the lock: hand the work to another thread. */
  interface Listener {
    /** The demand of these services changed. */
    void demandChanged(Set<String> services);

    /** A stream of a zone not seen before opened: its group needs a snapshot. */
    void zoneSeen(String zone);
  }

  private static final Logger log = LoggerFactory.getLogger(Subscribers.class);
  private static final String GROUP_PREFIX = "zone/";
  /** Bound of the set of nodes already logged for an invalid zone. */
  private static final int MAX_LOGGED = 10_000;

  private final Listener listener;
  private final Map<Long, Stream> streams = new HashMap<>();
  /** Per service and zone, the streams of each node subscribed. */
  private final Map<String, Map<String, Map<String, Integer>>> byService = new HashMap<>();
  private final Set<String> zones = new HashSet<>();
  private final Set<String> loggedInvalid = ConcurrentHashMap.newKeySet();

  private static final class Stream {
    final String nodeId;
    @Nullable final String zone;
    final Set<String> services = new HashSet<>();

    Stream(String nodeId, @Nullable String zone) {
      this.nodeId = nodeId;
      this.zone = zone;
    }
  }

  Subscribers(Listener listener) {
    this.listener = requireNonNull(listener, "listener");
  }

  /** The cache group of a caller in {@code zone}, or the zone-blind group for null. */
  static String groupOf(@Nullable String zone) {
    return zone == null ? XdsPublisher.GROUP : GROUP_PREFIX + zone;
  }

  /** The zone of a group, or null for the zone-blind group. */
  @Nullable
  static String zoneOfGroup(String group) {
    return group.startsWith(GROUP_PREFIX) ? group.substring(GROUP_PREFIX.length()) : null;
  }

  /** The cache group of {@code node}. */
  String groupOf(Node node) {
    return groupOf(zoneOf(node));
  }

  /** The node's zone, or null when it names none or names an invalid one (logged once per node). */
  @Nullable
  String zoneOf(Node node) {
    String zone = node.getLocality().getZone();
    if (zone.isEmpty()) {
      return null;
    }
    try {
      return Localities.checkName("zone", zone);
    } catch (IllegalArgumentException e) {
      if (loggedInvalid.size() >= MAX_LOGGED) {
        loggedInvalid.clear();
      }
      if (loggedInvalid.add(node.getId())) {
        log.warn("Client {} names an invalid zone, served as zone-less: {}",
            Validation.quote(node.getId()), e.getMessage());
      }
      return null;
    }
  }

  /** The stream's node, from its first request that has one; later ones are ignored. */
  synchronized void node(long streamId, Node node) {
    if (streams.containsKey(streamId)) {
      return;
    }
    String zone = zoneOf(node);
    streams.put(streamId, new Stream(node.getId(), zone));
    if (zone != null && zones.add(zone)) {
      listener.zoneSeen(zone);
    }
  }

  /** The services a state-of-the-world stream now subscribes to (all of them, as sent). */
  synchronized void subscribed(long streamId, Collection<String> services) {
    Stream s = streams.get(streamId);
    if (s == null) {
      return;
    }
    Set<String> now = new HashSet<>(services);
    Set<String> changed = new HashSet<>();
    for (String gone : Set.copyOf(s.services)) {
      if (!now.contains(gone)) {
        remove(s, gone, changed);
      }
    }
    for (String added : now) {
      if (!s.services.contains(added)) {
        add(s, added, changed);
      }
    }
    notify(changed);
  }

  /** A delta stream's subscription change. */
  synchronized void subscribed(long streamId, Collection<String> subscribe, Collection<String> unsubscribe) {
    Stream s = streams.get(streamId);
    if (s == null) {
      return;
    }
    Set<String> changed = new HashSet<>();
    for (String gone : unsubscribe) {
      if (s.services.contains(gone)) {
        remove(s, gone, changed);
      }
    }
    for (String added : subscribe) {
      if (!s.services.contains(added)) {
        add(s, added, changed);
      }
    }
    notify(changed);
  }

  synchronized void closed(long streamId) {
    Stream s = streams.remove(streamId);
    if (s == null) {
      return;
    }
    Set<String> changed = new HashSet<>();
    for (String service : Set.copyOf(s.services)) {
      remove(s, service, changed);
    }
    notify(changed);
  }

  /** Subscribed nodes per zone for {@code service}; zone-less nodes are not counted. */
  synchronized Map<String, Long> demand(String service) {
    Map<String, Long> out = new TreeMap<>();
    byService.getOrDefault(service, Map.of()).forEach((zone, nodes) -> out.put(zone, (long) nodes.size()));
    return out;
  }

  /** The zones of the streams seen so far. */
  synchronized Set<String> zones() {
    return Set.copyOf(zones);
  }

  private void add(Stream s, String service, Set<String> changed) {
    s.services.add(service);
    if (s.zone == null) {
      return;
    }
    Map<String, Integer> nodes =
        byService.computeIfAbsent(service, k -> new HashMap<>()).computeIfAbsent(s.zone, k -> new HashMap<>());
    if (nodes.merge(s.nodeId, 1, Integer::sum) == 1) {
      changed.add(service);
    }
  }

  private void remove(Stream s, String service, Set<String> changed) {
    s.services.remove(service);
    if (s.zone == null) {
      return;
    }
    Map<String, Map<String, Integer>> byZone = byService.get(service);
    Map<String, Integer> nodes = byZone == null ? null : byZone.get(s.zone);
    if (nodes == null) {
      return;
    }
    if (nodes.merge(s.nodeId, -1, Integer::sum) <= 0) {
      nodes.remove(s.nodeId);
      changed.add(service);
      if (nodes.isEmpty()) {
        byZone.remove(s.zone);
        if (byZone.isEmpty()) {
          byService.remove(service);
        }
      }
    }
  }

  private void notify(Set<String> changed) {
    if (!changed.isEmpty()) {
      listener.demandChanged(changed);
    }
  }
}
