package io.steelyard.cli;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Reads durations as operators type them: {@code 500ms}, {@code 3s}, {@code 2m}, {@code 1h}; a
 * bare number is seconds. ISO-8601 ({@code PT3S}) is accepted too.
 */
final class DurationConverter implements ITypeConverter<Duration> {

  private static final Pattern SIMPLE = Pattern.compile("(\\d{1,9})(ms|s|m|h)?");

  @Override
  public Duration convert(String value) {
    return parse(value);
  }

  static Duration parse(String value) {
    String v = value == null ? "" : value.strip();
    Matcher m = SIMPLE.matcher(v);
    if (m.matches()) {
      long n = Long.parseLong(m.group(1));
      String unit = m.group(2) == null ? "s" : m.group(2);
      return switch (unit) {
        case "ms" -> Duration.ofMillis(n);
        case "s" -> Duration.ofSeconds(n);
        case "m" -> Duration.ofMinutes(n);
        case "h" -> Duration.ofHours(n);
        default -> throw new AssertionError(unit);
      };
    }
    if (v.regionMatches(true, 0, "PT", 0, 2)) {
      try {
        Duration d = Duration.parse(v);
        if (!d.isNegative()) {
          return d;
        }
      } catch (java.time.format.DateTimeParseException e) {
        // fall through to the one message below
      }
    }
    throw new TypeConversionException(
        "'" + value + "' is not a duration (expected: e.g. 500ms, 3s, 2m, 1h)");
  }

  /** Formats {@code d} the way {@link #parse} reads it, in its largest exact unit. */
  static String format(Duration d) {
    long ms = d.toMillis();
    if (ms % 3_600_000 == 0 && ms != 0) {
      return ms / 3_600_000 + "h";
    }
    if (ms % 60_000 == 0 && ms != 0) {
      return ms / 60_000 + "m";
    }
    if (ms % 1000 == 0) {
      return ms / 1000 + "s";
    }
    return ms + "ms";
  }
}
