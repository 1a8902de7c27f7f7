package io.steelyard.cli;

import io.steelyard.discovery.Snapshot;
import io.steelyard.discovery.Snapshot.MalformedKey;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ServiceInstance;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * The lines {@code steelyard watch} prints, computed from snapshots: {@code present} and {@code
 * malformed} lines for the first one, then the difference between two consecutive ones.
 *
 * <p>A snapshot holds instances by address and malformed values by key. A key registered under
 * its own address (what the agent and the sidecar write) links the two, so that a value turning
 * unreadable prints only {@code malformed KEY: ...} and a repaired one only {@code added ...}, as
 * a per-event watch would.
 *
 * <p>Pure functions of their arguments: no I/O, no clock; thread-safe.
 */
final class WatchLines {

  private final KeyLayout layout;
  private final String service;

  WatchLines(KeyLayout layout, String service) {
    this.layout = layout;
    this.service = service;
  }

  /** What a snapshot shows: instances by address (in address order) and malformed keys. */
  record View(Map<String, ServiceInstance> instances, Map<String, String> malformed) {

    static View of(Snapshot s) {
      return of(s.instances(), s.malformed());
    }

    static View of(List<ServiceInstance> instances, List<MalformedKey> malformed) {
      Map<String, ServiceInstance> byAddress = new LinkedHashMap<>();
      for (ServiceInstance i : instances) {
        byAddress.put(i.address(), i);
      }
      Map<String, String> reasons = new TreeMap<>();
      for (MalformedKey m : malformed) {
        reasons.put(m.key(), unquote(m.reason()));
      }
      return new View(byAddress, reasons);
    }

    /**
     * The reason without the single quotes {@link MalformedKey#reason()} is documented to come
     * in (its control characters stay escaped): the line already ends with it, and {@code list}
     * prints the same reason unquoted.
     */
    private static String unquote(String reason) {
      return reason.length() >= 2 && reason.startsWith("'") && reason.endsWith("'")
          ? reason.substring(1, reason.length() - 1)
          : reason;
    }
  }

  /** One line per instance and per malformed key of {@code first}, in key order. */
  List<String> present(View first) {
    TreeMap<String, String> byKey = new TreeMap<>();
    for (ServiceInstance i : first.instances().values()) {
      byKey.put(layout.instanceKey(service, i.address()), "present " + describe(i));
    }
    for (Map.Entry<String, String> m : first.malformed().entrySet()) {
      byKey.put(m.getKey(), malformed(m.getKey(), m.getValue()));
    }
    return new ArrayList<>(byKey.values());
  }

  /**
   * What changed from {@code before} to {@code after}: removals first, then changed and new
   * instances by address, then newly malformed keys. Empty when nothing visible changed (the same
   * value written again, or only the staleness or the revision moved).
   */
  List<String> changes(View before, View after) {
    Map<String, ServiceInstance> was = before.instances();
    Map<String, ServiceInstance> now = after.instances();
    Map<String, String> wasMalformed = before.malformed();
    Map<String, String> nowMalformed = after.malformed();
    List<String> lines = new ArrayList<>();

    for (String address : was.keySet()) {
      // An instance whose key now holds an unreadable value is reported by the malformed line.
      if (!now.containsKey(address) && !nowMalformed.containsKey(layout.instanceKey(service, address))) {
        lines.add("removed " + address);
      }
    }
    for (String key : wasMalformed.keySet()) {
      if (!nowMalformed.containsKey(key) && !repaired(key, now)) {
        lines.add("removed " + layout.instanceId(service, key).orElse(key));
      }
    }
    for (ServiceInstance a : now.values()) {
      ServiceInstance b = was.get(a.address());
      if (b == null) {
        lines.add("added " + describe(a));
      } else if (b.weight() != a.weight()) {
        lines.add("weight " + a.address() + " " + b.weight() + " -> " + a.weight());
      } else if (!b.equals(a)) {
        lines.add("updated " + a.address() + " weight=" + a.weight() + " "
            + ListCommand.metadataText(a.metadata()));
      }
    }
    for (Map.Entry<String, String> m : nowMalformed.entrySet()) {
      if (!Objects.equals(wasMalformed.get(m.getKey()), m.getValue())) {
        lines.add(malformed(m.getKey(), m.getValue()));
      }
    }
    return lines;
  }

  /** Whether malformed {@code key} now holds an instance registered under its own address. */
  private boolean repaired(String key, Map<String, ServiceInstance> now) {
    return layout.instanceId(service, key).map(now::containsKey).orElse(false);
  }

  private static String describe(ServiceInstance i) {
    return i.address() + " weight=" + i.weight()
        + (i.metadata().isEmpty() ? "" : " " + ListCommand.metadataText(i.metadata()));
  }

  private static String malformed(String key, String reason) {
    return "malformed " + key + ": " + reason;
  }
}
