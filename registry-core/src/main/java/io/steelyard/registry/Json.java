package io.steelyard.registry;

import com.google.gson.Strictness;
import com.google.gson.stream.JsonReader;
import com.google.gson.stream.JsonToken;
import java.io.IOException;
import java.io.StringReader;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * JSON for registry values: read with Gson's {@link JsonReader} (strict, nesting bounded), written
 * by a writer that escapes exactly as Go's {@code encoding/json} does, so the values we write are
 * byte-identical to Go's.
 *
 * <p>The reader returns {@link Map} (insertion order, last duplicate wins as in Go), {@link List},
 * {@link String}, {@link BigDecimal}, {@link Boolean} or {@link #NULL}; it throws {@link
 * Malformed} naming the problem and where, and bounds nesting depth and number size, so hostile
 * values cost little.
 */
final class Json {

  /** The JSON {@code null}. */
  static final Object NULL = new Object() {
        @Override
        public String toString() {
          return "null";
        }
      };

  private static final int MAX_DEPTH = 32;
  /** Longer number literals are refused before {@link BigDecimal} sees them. */
  private static final int MAX_NUMBER_CHARS = 64;
  /** Exponents with more digits (1e999999999) would make BigDecimal work hard downstream. */
  private static final int MAX_EXPONENT_DIGITS = 4;
  private static final char[] HEX = "0123456789abcdef".toCharArray();
  private static final String GSON_LENIENT_ADVICE =
      "Use JsonReader.setStrictness(Strictness.LENIENT) to accept malformed JSON";

  static final class Malformed extends Exception {
    private static final long serialVersionUID = 1L;

    Malformed(String message) {
      super(message, null, false, false);
    }
  }

  private Json() {}

  static Object parse(String text) throws Malformed {
    JsonReader r = new JsonReader(new StringReader(text));
    r.setStrictness(Strictness.STRICT);
    // value() stops at MAX_DEPTH with its own message; Gson's limit is the second guard.
    r.setNestingLimit(MAX_DEPTH + 2);
    try {
      Object v = value(r, 0);
      if (r.peek() != JsonToken.END_DOCUMENT) {
        throw new Malformed("trailing characters at " + r.getPath());
      }
      return v;
    } catch (IOException | IllegalStateException e) {
      // MalformedJsonException, EOFException, or a token where another was expected.
      throw new Malformed(firstLine(e.getMessage()));
    }
  }

  private static Object value(JsonReader r, int depth) throws IOException, Malformed {
    if (depth > MAX_DEPTH) {
      throw new Malformed("nesting deeper than " + MAX_DEPTH + " at " + r.getPath());
    }
    switch (r.peek()) {
      case BEGIN_OBJECT -> {
        Map<String, Object> m = new LinkedHashMap<>();
        r.beginObject();
        while (r.hasNext()) {
          String k = r.nextName();
          m.put(k, value(r, depth + 1));
        }
        r.endObject();
        return m;
      }
      case BEGIN_ARRAY -> {
        List<Object> l = new ArrayList<>();
        r.beginArray();
        while (r.hasNext()) {
          l.add(value(r, depth + 1));
        }
        r.endArray();
        return l;
      }
      case STRING -> {
        return r.nextString();
      }
      case NUMBER -> {
        return number(r);
      }
      case BOOLEAN -> {
        return r.nextBoolean();
      }
      case NULL -> {
        r.nextNull();
        return NULL;
      }
      default -> throw new Malformed("unexpected " + r.peek() + " at " + r.getPath());
    }
  }

  private static BigDecimal number(JsonReader r) throws IOException, Malformed {
    String path = r.getPath();
    String n = r.nextString(); // the literal as written; Gson has checked its grammar
    if (n.length() > MAX_NUMBER_CHARS) {
      throw new Malformed("number too long at " + path);
    }
    int e = Math.max(n.indexOf('e'), n.indexOf('E'));
    if (e >= 0) {
      int digits = n.length() - e - 1;
      if (digits > 0 && (n.charAt(e + 1) == '+' || n.charAt(e + 1) == '-')) {
        digits--;
      }
      if (digits > MAX_EXPONENT_DIGITS) {
        throw new Malformed("exponent too large at " + path);
      }
    }
    return new BigDecimal(n);
  }

  /** Gson's message, first line only (a troubleshooting link follows), without its advice. */
  private static String firstLine(String s) {
    if (s == null) {
      return "unreadable";
    }
    int nl = s.indexOf('\n');
    String line = (nl < 0 ? s : s.substring(0, nl)).strip();
    // Display only: an operator has no JsonReader to make lenient.
    return line.replace(GSON_LENIENT_ADVICE, "malformed JSON");
  }

  // Go-exact writing, hand-written on purpose: Gson's HTML-safe mode also escapes = and ' and
  // passes unpaired surrogates through, so its bytes would differ from Go's.

  /**
   * Appends {@code v} as a JSON string escaped like Go's {@code encoding/json} (1.22+): short
   * escapes for {@code \" \\ \b \f \n \r \t}, backslash-u00XX (lower-case hex) for other control
   * characters, {@code <}, {@code >}, {@code &} as backslash-u003c/003e/0026, U+2028/U+2029
   * escaped, and unpaired surrogates (invalid UTF-8 in Go) as backslash-ufffd.
   */
  static void writeGoString(StringBuilder out, String v) {
    out.append('"');
    for (int i = 0; i < v.length(); i++) {
      char c = v.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\b' -> out.append("\\b");
        case '\f' -> out.append("\\f");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        case '<', '>', '&', '\u2028', '\u2029' -> unicodeEscape(out, c);
        default -> {
          if (c < 0x20) {
            unicodeEscape(out, c);
          } else if (Character.isHighSurrogate(c)
              && i + 1 < v.length()
              && Character.isLowSurrogate(v.charAt(i + 1))) {
            out.append(c).append(v.charAt(++i));
          } else if (Character.isSurrogate(c)) {
            out.append("\\ufffd");
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }

  private static void unicodeEscape(StringBuilder out, char c) {
    out.append("\\u")
        .append(HEX[(c >> 12) & 0xf])
        .append(HEX[(c >> 8) & 0xf])
        .append(HEX[(c >> 4) & 0xf])
        .append(HEX[c & 0xf]);
  }

  /** Compact JSON text of a parsed value, for metadata values that are not strings. */
  static String toText(Object v) {
    StringBuilder b = new StringBuilder();
    write(b, v);
    return b.toString();
  }

  private static void write(StringBuilder b, Object v) {
    if (v instanceof String str) {
      writeGoString(b, str);
    } else if (v instanceof BigDecimal n) {
      b.append(n.toString());
    } else if (v instanceof Map<?, ?> m) {
      b.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> e : m.entrySet()) {
        if (!first) {
          b.append(',');
        }
        first = false;
        writeGoString(b, (String) e.getKey());
        b.append(':');
        write(b, e.getValue());
      }
      b.append('}');
    } else if (v instanceof List<?> l) {
      b.append('[');
      for (int i = 0; i < l.size(); i++) {
        if (i > 0) {
          b.append(',');
        }
        write(b, l.get(i));
      }
      b.append(']');
    } else {
      b.append(v); // Boolean or NULL
    }
  }
}
