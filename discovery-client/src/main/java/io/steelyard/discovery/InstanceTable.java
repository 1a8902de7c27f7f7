package io.steelyard.discovery;

import com.google.common.collect.ImmutableList;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.registry.Validation;
import io.steelyard.registry.ValueCodec;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The known keys of one service prefix and what they decoded to. Not thread-safe: owned by one
 * watcher and touched only from its serialized executor.
 *
 * <p>Only the decoded instance (or why the value was malformed) and the key's mod revision are
 * kept, never the raw value, so a large service costs a few hundred bytes per instance.
 *
 * <p>Cost, for a service of n instances: a put or remove is O(log n); a {@link #snapshot} is O(n)
 * when the view changed (one walk in key order: keys are {@code <prefix><address>}, so addresses
 * come out sorted and unique without sorting or hashing; other keys fall back to O(n log n)), and
 * O(1) when it did not (the previous lists are reused, so comparing views is an identity check).
 */
final class InstanceTable {

  private static final Logger logger = LoggerFactory.getLogger(InstanceTable.class);

  /**
   * What a key currently holds: an instance, or (when its value was malformed) the reason,
   * already quoted for printing.
   */
  private record Entry(long modRevision, @Nullable ServiceInstance instance, @Nullable String reason) {}

  private final String service;
  private final String prefix;
  private final String endpoints;
  private final Runnable onMalformed;
  private final TreeMap<String, Entry> entries = new TreeMap<>();
  // The view of the last snapshot, reused until a put or remove changes it.
  private boolean viewChanged = true;
  private List<ServiceInstance> lastInstances = List.of();
  private List<Snapshot.MalformedKey> lastMalformed = List.of();

  /** {@code onMalformed} runs once per malformed key version, on the caller's thread. */
  InstanceTable(String service, KeyLayout layout, String endpoints, Runnable onMalformed) {
    this.service = service;
    this.prefix = layout.servicePrefix(service); // validated once, not per key
    this.endpoints = endpoints;
    this.onMalformed = onMalformed;
  }

  int size() {
    return entries.size();
  }

  /**
   * Records a put. Returns whether the view (instances or malformed keys) may have changed. A
   * malformed value is
   * warned about and counted once per key and mod revision (a re-list that sees the same bad
   * value again stays silent), and removes whatever good value the key held before: the key no
   * longer describes a reachable instance.
   */
  boolean put(String key, byte[] value, long modRevision) {
    if (!key.startsWith(prefix) || key.length() == prefix.length()) {
      return false; // the prefix itself, or a key outside it: not an instance
    }
    Entry old = entries.get(key);
    if (old != null && old.modRevision == modRevision) {
      return false; // re-listed, unchanged
    }
    ServiceInstance instance = null;
    String reason = null;
    DecodedValue decoded = ValueCodec.decode(value);
    if (decoded instanceof DecodedValue.Accepted accepted) {
      try {
        instance = accepted.toInstance(service);
      } catch (IllegalArgumentException e) {
        decoded = new DecodedValue.Rejected(e.getMessage());
      }
    }
    if (decoded instanceof DecodedValue.Rejected rejected) {
      onMalformed.run();
      reason = Validation.quote(rejected.reason());
      logger.warn(
          "Skipping malformed value of key {} (service {}, etcd {}, mod revision {}, {} bytes): {}",
          Validation.quote(key), service, endpoints, modRevision, value.length, reason);
    }
    Entry now = new Entry(modRevision, instance, reason);
    entries.put(key, now);
    boolean changed = old == null
        || !Objects.equals(old.instance, instance)
        || !Objects.equals(old.reason, reason);
    viewChanged |= changed;
    return changed;
  }

  /**
   * Whether this table holds exactly the keys of {@code modRevisions} (key to mod revision, as
   * etcd listed the prefix at some revision), each at that mod revision; keys this table never
   * holds (the prefix itself) are not compared. O(n).
   */
  boolean holdsExactly(Map<String, Long> modRevisions) {
    int compared = 0;
    for (Map.Entry<String, Long> kv : modRevisions.entrySet()) {
      String key = kv.getKey();
      if (!key.startsWith(prefix) || key.length() == prefix.length()) {
        continue;
      }
      Entry e = entries.get(key);
      if (e == null || e.modRevision != kv.getValue()) {
        return false;
      }
      compared++;
    }
    return compared == entries.size();
  }

  boolean remove(String key) {
    boolean removed = entries.remove(key) != null;
    viewChanged |= removed;
    return removed;
  }

  /**
   * A watch response's events, in revision order, onto a view applied up to {@code applied}.
   * Events at or below it are already in the view and only counted ({@code skipped}): etcd never
   * sends them, but its gRPC proxy may, as a watch it coalesces into a shared one can start from an
   * older revision (etcd's grpc_proxy docs, "Limitations"); applying one would move a key back in
   * time. Returns whether instances changed.
   */
  boolean apply(List<EtcdReader.Event> events, long applied, Runnable skipped) {
    boolean changed = false;
    for (EtcdReader.Event event : events) {
      EtcdReader.KeyVersion kv = event.kv();
      if (kv.modRevision() <= applied) {
        skipped.run();
      } else {
        changed |= event.delete() ? remove(kv.key()) : put(kv.key(), kv.value(), kv.modRevision());
      }
    }
    return changed;
  }

  /** A listing: the complete set of keys at one revision. Returns whether instances changed. */
  boolean replaceAll(Collection<EtcdReader.KeyVersion> listing) {
    boolean changed = false;
    if (entries.isEmpty()) { // the first listing: nothing can be gone
      for (EtcdReader.KeyVersion kv : listing) {
        changed |= put(kv.key(), kv.value(), kv.modRevision());
      }
      return changed;
    }
    Set<String> listed = new HashSet<>(listing.size() * 2);
    for (EtcdReader.KeyVersion kv : listing) {
      listed.add(kv.key());
    }
    Set<String> gone = new HashSet<>(entries.keySet());
    gone.removeAll(listed);
    for (String key : gone) {
      changed |= remove(key);
    }
    for (EtcdReader.KeyVersion kv : listing) {
      changed |= put(kv.key(), kv.value(), kv.modRevision());
    }
    return changed;
  }

  Snapshot snapshot(long revision, @Nullable Instant staleSince) {
    if (viewChanged) {
      rebuildView();
      viewChanged = false;
    }
    return new Snapshot(service, lastInstances, lastMalformed, revision, staleSince);
  }

  /**
   * Instances sorted and unique by address, first key wins (two keys for one address would
   * otherwise give the balancer two subchannels to one server), and the malformed keys.
   */
  private void rebuildView() {
    List<ServiceInstance> list = new ArrayList<>(entries.size());
    List<Snapshot.MalformedKey> malformed = new ArrayList<>();
    String previous = null;
    boolean sortedAndUnique = true;
    for (Map.Entry<String, Entry> e : entries.entrySet()) { // in key order
      ServiceInstance instance = e.getValue().instance;
      if (instance != null) {
        sortedAndUnique &= previous == null || previous.compareTo(instance.address()) < 0;
        previous = instance.address();
        list.add(instance);
      } else {
        malformed.add(new Snapshot.MalformedKey(e.getKey(), e.getValue().reason));
      }
    }
    if (!sortedAndUnique) { // some key is not <prefix><its address>
      Map<String, ServiceInstance> byAddress = new HashMap<>(list.size() * 2);
      for (ServiceInstance instance : list) {
        byAddress.putIfAbsent(instance.address(), instance);
      }
      list = new ArrayList<>(byAddress.values());
      list.sort(Comparator.comparing(ServiceInstance::address));
    }
    lastInstances = ImmutableList.copyOf(list);
    lastMalformed = ImmutableList.copyOf(malformed);
  }
}
