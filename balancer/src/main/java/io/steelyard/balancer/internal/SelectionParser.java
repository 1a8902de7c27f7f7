package io.steelyard.balancer.internal;

import static io.steelyard.balancer.spi.EndpointSelection.FALLBACK_ANY;
import static io.steelyard.balancer.spi.EndpointSelection.FALLBACK_NONE;
import static io.steelyard.balancer.spi.EndpointSelection.FIELD_FALLBACK;
import static io.steelyard.balancer.spi.EndpointSelection.FIELD_PERCENT;
import static io.steelyard.balancer.spi.EndpointSelection.FIELD_SELECTOR;
import static io.steelyard.balancer.spi.EndpointSelection.FIELD_SPLIT;
import static io.steelyard.balancer.spi.EndpointSelection.FIELD_SUBSET;
import static io.steelyard.balancer.spi.EndpointSelection.MAX_SELECTORS;
import static io.steelyard.balancer.spi.EndpointSelection.TOTAL_BASIS_POINTS;

import io.steelyard.balancer.spi.EndpointSelection;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.annotation.Nullable;

/**
 * Reads the {@value EndpointSelection#FIELD_SUBSET} and {@value EndpointSelection#FIELD_SPLIT}
 * options ({@link EndpointSelection} has their shape) from a policy's raw JSON config. A bad value
 * is one line naming the path to it and what was expected, e.g. {@code split[1].percent: 120
 * (expected: a number 0..100 in steps of 0.01)}; unknown fields inside the options are warnings,
 * as everywhere in a policy's config.
 */
final class SelectionParser {

  private static final Set<String> SELECT_FIELDS = Set.of(FIELD_SELECTOR, FIELD_FALLBACK);
  private static final Set<String> SPLIT_FIELDS = Set.of(FIELD_SELECTOR, FIELD_PERCENT);
  private static final String SELECTOR_EXAMPLE = "e.g. {\"version\": \"v2\"}";

  private SelectionParser() {}

  /** Whether {@code field} is one this class reads. */
  static boolean reads(String field) {
    return field.equals(FIELD_SUBSET) || field.equals(FIELD_SPLIT);
  }

  /**
   * Reads the options present in {@code raw} into {@code builder}; unknown nested fields go to
   * {@code unknown} by path ({@code subset.name}, {@code split[1].name}). Returns {@code "path:
   * what is wrong"}, or null.
   */
  @Nullable
  static String read(Map<String, ?> raw, WeightedPolicyConfig.Builder builder, List<String> unknown) {
    boolean subset = raw.containsKey(FIELD_SUBSET);
    boolean split = raw.containsKey(FIELD_SPLIT);
    if (subset && split) {
      return FIELD_SPLIT + ": set together with " + FIELD_SUBSET + " (expected: one of them)";
    }
    if (!subset && !split) {
      return null;
    }
    Result result = subset
        ? readSubset(raw.get(FIELD_SUBSET), unknown)
        : readSplit(raw.get(FIELD_SPLIT), unknown);
    if (result.error != null) {
      return result.error;
    }
    builder.endpointSelection(result.selection);
    return null;
  }

  private record Result(@Nullable EndpointSelection selection, @Nullable String error) {
    static Result error(String error) {
      return new Result(null, error);
    }
  }

  private static Result readSubset(Object raw, List<String> unknown) {
    List<Map<String, String>> selectors = new ArrayList<>();
    String path = FIELD_SUBSET;
    Object level = raw;
    while (true) {
      if (!(level instanceof Map<?, ?> map)) {
        return Result.error(
            path + ": " + level + " (expected: an object with \"" + FIELD_SELECTOR + "\")");
      }
      if (selectors.size() == MAX_SELECTORS) {
        return Result.error(path + ": more than " + MAX_SELECTORS
            + " selectors (expected: at most " + MAX_SELECTORS + ")");
      }
      noteUnknown(map, SELECT_FIELDS, path, unknown);
      Object selector = map.get(FIELD_SELECTOR);
      String problem = readSelector(selector, path + "." + FIELD_SELECTOR, selectors);
      if (problem != null) {
        return Result.error(problem);
      }
      path = path + "." + FIELD_FALLBACK;
      Object fallback = map.containsKey(FIELD_FALLBACK) ? map.get(FIELD_FALLBACK) : FALLBACK_ANY;
      if (FALLBACK_ANY.equals(fallback) || FALLBACK_NONE.equals(fallback)) {
        return new Result(EndpointSelection.select(selectors, FALLBACK_ANY.equals(fallback)), null);
      }
      if (!(fallback instanceof Map)) {
        return Result.error(path + ": " + quoted(fallback) + " (expected: \"" + FALLBACK_ANY + "\", \""
            + FALLBACK_NONE + "\" or an object with \"" + FIELD_SELECTOR + "\")");
      }
      level = fallback;
    }
  }

  private static Result readSplit(Object raw, List<String> unknown) {
    String example = "[{\"" + FIELD_SELECTOR + "\": {...}, \"" + FIELD_PERCENT + "\": 90}, ...]";
    if (!(raw instanceof List<?> entries) || entries.isEmpty() || entries.size() > MAX_SELECTORS) {
      return Result.error(FIELD_SPLIT + ": " + raw + " (expected: a list of 1.." + MAX_SELECTORS
          + " entries, " + example + ")");
    }
    List<Map<String, String>> selectors = new ArrayList<>();
    int[] basisPoints = new int[entries.size()];
    long sum = 0;
    for (int i = 0; i < entries.size(); i++) {
      String path = FIELD_SPLIT + "[" + i + "]";
      if (!(entries.get(i) instanceof Map<?, ?> entry)) {
        return Result.error(path + ": " + entries.get(i) + " (expected: an object, " + example + ")");
      }
      noteUnknown(entry, SPLIT_FIELDS, path, unknown);
      String problem = readSelector(entry.get(FIELD_SELECTOR), path + "." + FIELD_SELECTOR, selectors);
      if (problem != null) {
        return Result.error(problem);
      }
      int repeated = selectors.subList(0, i).indexOf(selectors.get(i));
      if (repeated >= 0) {
        return Result.error(path + "." + FIELD_SELECTOR + ": " + selectors.get(i) + " repeats "
            + FIELD_SPLIT + "[" + repeated + "]'s (expected: a different selector per entry)");
      }
      Object percent = entry.get(FIELD_PERCENT);
      basisPoints[i] = basisPoints(percent);
      if (basisPoints[i] < 0) {
        return Result.error(path + "." + FIELD_PERCENT + ": " + (percent == null ? "missing" : percent)
            + " (expected: a number 0..100 in steps of 0.01)");
      }
      sum += basisPoints[i];
    }
    if (sum != TOTAL_BASIS_POINTS) {
      return Result.error(FIELD_SPLIT + ": percents sum to "
          + percentText(sum) + " (expected: 100)");
    }
    return new Result(EndpointSelection.split(selectors, basisPoints), null);
  }

  /** Adds the selector at {@code path} to {@code out}; returns what is wrong with it, or null. */
  @Nullable
  private static String readSelector(@Nullable Object raw, String path, List<Map<String, String>> out) {
    if (!(raw instanceof Map<?, ?> map)) {
      return path + ": " + (raw == null ? "missing" : raw)
          + " (expected: an object of string labels, " + SELECTOR_EXAMPLE + ")";
    }
    if (map.isEmpty()) {
      return path + ": {} (expected: at least one label, " + SELECTOR_EXAMPLE + ")";
    }
    Map<String, String> labels = new LinkedHashMap<>();
    for (Map.Entry<?, ?> label : map.entrySet()) {
      if (!(label.getValue() instanceof String value)) {
        return path + "." + label.getKey() + ": " + label.getValue()
            + " (expected: a string, as metadata values are; write \"" + label.getValue() + "\")";
      }
      labels.put(String.valueOf(label.getKey()), value);
    }
    out.add(labels);
    return null;
  }

  /** {@code 9550} as {@code "95.5"}: basis points as the percent users write. */
  private static String percentText(long basisPoints) {
    return BigDecimal.valueOf(basisPoints, 2).stripTrailingZeros().toPlainString();
  }

  /** {@code percent} in hundredths, or -1 when it is not a number 0..100 in steps of 0.01. */
  private static int basisPoints(@Nullable Object percent) {
    if (!(percent instanceof Number n)) {
      return -1;
    }
    double hundredths = n.doubleValue() * 100;
    long rounded = Math.round(hundredths);
    // JSON numbers arrive as doubles: 0.29 * 100 is 28.999999999999996, still 29 hundredths.
    if (!(Math.abs(hundredths - rounded) < 1e-6) || rounded < 0 || rounded > TOTAL_BASIS_POINTS) {
      return -1;
    }
    return (int) rounded;
  }

  /** Adds each key of {@code map} outside {@code known} to {@code unknown} as {@code path.key}. */
  static void noteUnknown(Map<?, ?> map, Set<String> known, String path, List<String> unknown) {
    for (Object key : map.keySet()) {
      if (!known.contains(key)) {
        unknown.add(path + "." + key);
      }
    }
  }

  private static String quoted(Object value) {
    return value instanceof String ? "\"" + value + "\"" : String.valueOf(value);
  }
}
