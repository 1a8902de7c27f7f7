package io.steelyard.agent;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The samples of a Prometheus text-format scrape (version 0.0.4): {@code name{label="value",...}
 * value [timestamp]} per line, comments and blank lines skipped, label values unescaped. Written
 * by hand: Prometheus' Java libraries write this format but none reads it, and {@link
 * ServerMeters} needs only the samples.
 */
final class PrometheusText {

  /** One sample line. */
  record Sample(String name, Map<String, String> labels, double value) {}

  private PrometheusText() {}

  /** Every sample of {@code text}; a line that cannot be read is skipped. */
  static List<Sample> parse(String text) {
    List<Sample> out = new ArrayList<>();
    for (String line : text.split("\n")) {
      line = line.strip();
      if (line.isEmpty() || line.startsWith("#")) {
        continue;
      }
      Sample s = parseLine(line);
      if (s != null) {
        out.add(s);
      }
    }
    return out;
  }

  private static Sample parseLine(String line) {
    int i = 0;
    while (i < line.length() && line.charAt(i) != '{' && line.charAt(i) != ' ') {
      i++;
    }
    String name = line.substring(0, i);
    Map<String, String> labels = new HashMap<>();
    if (i < line.length() && line.charAt(i) == '{') {
      i++;
      while (i < line.length() && line.charAt(i) != '}') {
        int eq = line.indexOf('=', i);
        if (eq < 0 || eq + 1 >= line.length() || line.charAt(eq + 1) != '"') {
          return null;
        }
        String key = line.substring(i, eq).strip();
        StringBuilder value = new StringBuilder();
        int j = eq + 2;
        for (; j < line.length() && line.charAt(j) != '"'; j++) {
          char c = line.charAt(j);
          if (c == '\\' && j + 1 < line.length()) {
            char n = line.charAt(++j);
            value.append(n == 'n' ? '\n' : n);
          } else {
            value.append(c);
          }
        }
        if (j >= line.length()) {
          return null;
        }
        labels.put(key, value.toString());
        i = j + 1;
        if (i < line.length() && line.charAt(i) == ',') {
          i++;
        }
      }
      i++; // the closing brace
    }
    String[] rest = line.substring(Math.min(i, line.length())).strip().split("\\s+");
    if (name.isEmpty() || rest.length == 0 || rest[0].isEmpty()) {
      return null;
    }
    try {
      return new Sample(name, labels, parseValue(rest[0]));
    } catch (NumberFormatException e) {
      return null;
    }
  }

  private static double parseValue(String v) {
    switch (v) {
      case "+Inf":
        return Double.POSITIVE_INFINITY;
      case "-Inf":
        return Double.NEGATIVE_INFINITY;
      case "NaN":
        return Double.NaN;
      default:
        return Double.parseDouble(v);
    }
  }
}
