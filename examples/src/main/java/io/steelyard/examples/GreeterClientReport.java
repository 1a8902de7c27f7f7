package io.steelyard.examples;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeSet;

/**
 * One run of {@code greeter-client}: calls per backend, the observed share and the share expected
 * from the weights in etcd, the {@code --expect-*} checks, and the table or JSON printed.
 */
final class GreeterClientReport {
  final String target;
  final Map<String, Long> calls;
  final Map<String, Long> failures;
  final Map<String, Integer> weights;
  final long elapsedMillis;
  final Map<String, Row> rows = new LinkedHashMap<>();

  record Row(String address, Integer weight, long calls, double observed, double expected) {}

  GreeterClientReport(String target, Map<String, Long> calls, Map<String, Long> failures,
      Map<String, Integer> weights, long elapsedMillis) {
    this.target = target;
    this.calls = calls;
    this.failures = failures;
    this.weights = weights;
    this.elapsedMillis = elapsedMillis;
    long ok = succeeded();
    long total = weights.values().stream().mapToLong(Integer::longValue).sum();
    TreeSet<String> addresses = new TreeSet<>(weights.keySet());
    addresses.addAll(calls.keySet());
    for (String a : addresses) {
      Integer w = weights.get(a);
      double expected;
      if (w == null) {
        expected = 0; // answered but no longer registered
      } else if (total == 0) {
        expected = 1.0 / weights.size(); // all drained: the balancer falls back to equal shares
      } else {
        expected = (double) w / total;
      }
      long c = calls.getOrDefault(a, 0L);
      rows.put(a, new Row(a, w, c, ok == 0 ? 0 : (double) c / ok, expected));
    }
  }

  long succeeded() {
    return calls.values().stream().mapToLong(Long::longValue).sum();
  }

  long failed() {
    return failures.values().stream().mapToLong(Long::longValue).sum();
  }

  List<String> check(Double withinPoints, Long maxFailures) {
    List<String> problems = new ArrayList<>();
    if (maxFailures != null && failed() > maxFailures) {
      problems.add(failed() + " calls failed (allowed: " + maxFailures + ") " + failures);
    }
    if (withinPoints != null) {
      for (Row r : rows.values()) {
        if (r.weight() != null && r.weight() == 0 && weights.values().stream().anyMatch(w -> w > 0)) {
          if (r.calls() > 0) {
            problems.add(r.address() + " is drained (weight 0) but answered " + r.calls() + " calls");
          }
        } else if (Math.abs(r.observed() - r.expected()) * 100 > withinPoints) {
          problems.add(String.format(Locale.ROOT, "%s observed %.1f%%, expected %.1f%% (allowed: +-%s points)",
              r.address(), r.observed() * 100, r.expected() * 100, withinPoints));
        }
      }
    }
    return problems;
  }

  String table(List<String> problems) {
    StringBuilder sb = new StringBuilder();
    sb.append(String.format(Locale.ROOT, "%s: %d calls, %d ok, %d failed%s in %.1f s%n",
        target, succeeded() + failed(), succeeded(), failed(),
        failures.isEmpty() ? "" : " " + failures, elapsedMillis / 1000.0));
    sb.append(String.format(Locale.ROOT, "%-22s %7s %8s %9s %9s%n", "BACKEND", "WEIGHT", "CALLS", "OBSERVED", "EXPECTED"));
    for (Row r : rows.values()) {
      sb.append(String.format(Locale.ROOT, "%-22s %7s %8d %8.1f%% %8.1f%%%n",
          r.address(), r.weight() == null ? "-" : r.weight().toString(), r.calls(),
          r.observed() * 100, r.expected() * 100));
    }
    if (!problems.isEmpty()) {
      sb.append("CHECK FAILED").append(System.lineSeparator());
    }
    return sb.toString();
  }

  String json(List<String> problems) {
    StringBuilder sb = new StringBuilder();
    sb.append("{\"target\":").append(quote(target))
        .append(",\"succeeded\":").append(succeeded())
        .append(",\"failed\":").append(failed())
        .append(",\"failures\":{");
    String sep = "";
    for (Map.Entry<String, Long> f : failures.entrySet()) {
      sb.append(sep).append(quote(f.getKey())).append(':').append(f.getValue());
      sep = ",";
    }
    sb.append("},\"elapsedMillis\":").append(elapsedMillis).append(",\"backends\":[");
    sep = "";
    for (Row r : rows.values()) {
      sb.append(sep).append("{\"address\":").append(quote(r.address()))
          .append(",\"weight\":").append(r.weight() == null ? "null" : r.weight().toString())
          .append(",\"calls\":").append(r.calls())
          .append(String.format(Locale.ROOT, ",\"observedShare\":%.4f,\"expectedShare\":%.4f}",
              r.observed(), r.expected()));
      sep = ",";
    }
    sb.append("],\"problems\":[");
    sep = "";
    for (String p : problems) {
      sb.append(sep).append(quote(p));
      sep = ",";
    }
    return sb.append("]}").append(System.lineSeparator()).toString();
  }

  private static String quote(String s) {
    StringBuilder sb = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') {
        sb.append('\\').append(c);
      } else if (c < 0x20) {
        sb.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
      } else {
        sb.append(c);
      }
    }
    return sb.append('"').toString();
  }
}
