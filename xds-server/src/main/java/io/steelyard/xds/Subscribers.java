package io.steelyard.xds;

import static com.google.common.base.Preconditions.checkArgument;
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
 * <p>Each zone served costs a snapshot group, so the zones are bounded: a zone is served while a
 * stream of it is open, and until the publisher {@linkplain #forgetIfIdle forgets} it once it has
 * had none for a grace ({@link #ZONE_GRACE}); at most {@code maxZones} zones are served at once.
 * A stream naming another zone while that many are served is served as zone-less and counts in
 * no zone's demand (logged once per node).
 *
 * <p>Threading: called on gRPC's threads; the listener is called under this object's lock and
 * must only hand the work on.
 */
final class Subscribers {

  /** Told of changes; called under the lock: hand the work to another thread. */
  interface Listener {
    /** The demand of these services changed. */
    void demandChanged(Set<String> services);

    /** A stream of a zone that had none opened: its group needs a snapshot. */
    void zoneSeen(String zone);

    /** The last stream of {@code zone} closed: {@link #forgetIfIdle} it after {@link #ZONE_GRACE}. */
    void zoneIdle(String zone);
  }

  /** Default bound of zones served at once: {@value}. */
  static final int DEFAULT_MAX_ZONES = 64;
  /**
   * How long a zone without streams keeps its group: long enough for a client that reconnects
   * (gRPC's first reconnect backoff is 1 s, a control-plane restart a few) not to churn groups.
   */
  static final java.time.Duration ZONE_GRACE = java.time.Duration.ofSeconds(30);

  private static final Logger log = LoggerFactory.getLogger(Subscribers.class);
  private static final String GROUP_PREFIX = "zone/";
  /** Bound of the set of nodes already logged for an invalid zone. */
  private static final int MAX_LOGGED = 10_000;

  private final Listener listener;
  private final int maxZones;
  private final Map<Long, Stream> streams = new HashMap<>();
  /** Per service and zone, the streams of each node subscribed. */
  private final Map<String, Map<String, Map<String, Integer>>> byService = new HashMap<>();
  /** Open streams per zone served; a zone with 0 is in its grace. Written under the lock. */
  private final Map<String, Integer> zones = new ConcurrentHashMap<>();
  /** Nodes already logged for an invalid zone or one over the bound. */
  private final Set<String> logged = ConcurrentHashMap.newKeySet();

  private static final class Stream {
    final String nodeId;
    @Nullable final String zone;
    final Set<String> services = new HashSet<>();

    Stream(String nodeId, @Nullable String zone) {
      this.nodeId = nodeId;
      this.zone = zone;
    }
  }

  Subscribers(Listener listener, int maxZones) {
    checkArgument(maxZones > 0, "maxZones: %s (expected: at least 1)", maxZones);
    this.listener = requireNonNull(listener, "listener");
    this.maxZones = maxZones;
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

  /** The cache group of {@code node}: its zone's while that zone is served, else zone-blind. */
  String groupOf(Node node) {
    String zone = zoneOf(node);
    return groupOf(zone != null && zones.containsKey(zone) ? zone : null);
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
      if (firstOf(node)) {
        log.warn("Client {} names an invalid zone, served as zone-less: {}",
            Validation.quote(node.getId()), e.getMessage());
      }
      return null;
    }
  }

  private boolean firstOf(Node node) {
    if (logged.size() >= MAX_LOGGED) {
      logged.clear();
    }
    return logged.add(node.getId());
  }

  /** The stream's node, from its first request that has one; later ones are ignored. */
  synchronized void node(long streamId, Node node) {
    if (streams.containsKey(streamId)) {
      return;
    }
    String zone = zoneOf(node);
    if (zone != null && !zones.containsKey(zone) && zones.size() >= maxZones) {
      if (firstOf(node)) {
        log.warn("Client {} names zone {} while {} zones are served already (--max-zones): served as zone-less",
            Validation.quote(node.getId()), Validation.quote(zone), maxZones);
      }
      zone = null;
    }
    streams.put(streamId, new Stream(node.getId(), zone));
    if (zone != null && zones.merge(zone, 1, Integer::sum) == 1) {
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
    if (s.zone != null && zones.merge(s.zone, -1, Integer::sum) == 0) {
      listener.zoneIdle(s.zone);
    }
  }

  /**
   * Stops serving {@code zone} if it still has no stream; returns whether it did. A stream of it
   * opening later makes it a new zone again ({@link Listener#zoneSeen}).
   */
  synchronized boolean forgetIfIdle(String zone) {
    return zones.remove(zone, 0);
  }

  /** Subscribed nodes per zone for {@code service}; zone-less nodes are not counted. */
  synchronized Map<String, Long> demand(String service) {
    Map<String, Long> out = new TreeMap<>();
    byService.getOrDefault(service, Map.of()).forEach((zone, nodes) -> out.put(zone, (long) nodes.size()));
    return out;
  }

  /** The zones served now, those in their grace included. */
  synchronized Set<String> zones() {
    return Set.copyOf(zones.keySet());
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
