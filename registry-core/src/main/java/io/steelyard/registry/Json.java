package io.steelyard.registry;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small strict JSON reader and a writer that escapes strings exactly as Go's
 * {@code encoding/json} does (HTML-safe), so the values we write are byte-identical to Go's.
 *
 * <p>The reader returns {@link Map} (insertion order, last duplicate wins as in Go), {@link List},
 * {@link String}, {@link BigDecimal}, {@link Boolean} or {@link #NULL}; it throws {@link
 * Malformed} with a position on any error and bounds nesting depth, so hostile values cost little.
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
  private static final char[] HEX = "0123456789abcdef".toCharArray();

  static final class Malformed extends Exception {
    private static final long serialVersionUID = 1L;

    Malformed(String message, int pos) {
      super(message + " at offset " + pos, null, false, false);
    }
  }

  private final String s;
  private int pos;

  private Json(String s) {
    this.s = s;
  }

  static Object parse(String text) throws Malformed {
    Json p = new Json(text);
    p.skipWs();
    Object v = p.value(0);
    p.skipWs();
    if (p.pos != text.length()) {
      throw new Malformed("trailing characters", p.pos);
    }
    return v;
  }

  private Object value(int depth) throws Malformed {
    if (depth > MAX_DEPTH) {
      throw new Malformed("nesting deeper than " + MAX_DEPTH, pos);
    }
    if (pos >= s.length()) {
      throw new Malformed("unexpected end", pos);
    }
    char c = s.charAt(pos);
    switch (c) {
      case '{':
        return object(depth);
      case '[':
        return array(depth);
      case '"':
        return string();
      case 't':
        literal("true");
        return Boolean.TRUE;
      case 'f':
        literal("false");
        return Boolean.FALSE;
      case 'n':
        literal("null");
        return NULL;
      default:
        if (c == '-' || (c >= '0' && c <= '9')) {
          return number();
        }
        throw new Malformed("unexpected character", pos);
    }
  }

  private Map<String, Object> object(int depth) throws Malformed {
    pos++; // {
    Map<String, Object> m = new LinkedHashMap<>();
    skipWs();
    if (peek() == '}') {
      pos++;
      return m;
    }
    while (true) {
      skipWs();
      if (peek() != '"') {
        throw new Malformed("expected a string key", pos);
      }
      String k = string();
      skipWs();
      expect(':');
      skipWs();
      m.put(k, value(depth + 1));
      skipWs();
      char c = peek();
      pos++;
      if (c == '}') {
        return m;
      }
      if (c != ',') {
        throw new Malformed("expected ',' or '}'", pos - 1);
      }
    }
  }

  private List<Object> array(int depth) throws Malformed {
    pos++; // [
    List<Object> l = new ArrayList<>();
    skipWs();
    if (peek() == ']') {
      pos++;
      return l;
    }
    while (true) {
      skipWs();
      l.add(value(depth + 1));
      skipWs();
      char c = peek();
      pos++;
      if (c == ']') {
        return l;
      }
      if (c != ',') {
        throw new Malformed("expected ',' or ']'", pos - 1);
      }
    }
  }

  private String string() throws Malformed {
    pos++; // opening quote
    StringBuilder b = new StringBuilder();
    while (true) {
      if (pos >= s.length()) {
        throw new Malformed("unterminated string", pos);
      }
      char c = s.charAt(pos++);
      if (c == '"') {
        return b.toString();
      }
      if (c < 0x20) {
        throw new Malformed("control character in string", pos - 1);
      }
      if (c != '\\') {
        b.append(c);
        continue;
      }
      if (pos >= s.length()) {
        throw new Malformed("unterminated escape", pos);
      }
      char e = s.charAt(pos++);
      switch (e) {
        case '"' -> b.append('"');
        case '\\' -> b.append('\\');
        case '/' -> b.append('/');
        case 'b' -> b.append('\b');
        case 'f' -> b.append('\f');
        case 'n' -> b.append('\n');
        case 'r' -> b.append('\r');
        case 't' -> b.append('\t');
        case 'u' -> {
          if (pos + 4 > s.length()) {
            throw new Malformed("short \\u escape", pos);
          }
          int v = 0;
          for (int i = 0; i < 4; i++) {
            int d = Character.digit(s.charAt(pos + i), 16);
            if (d < 0) {
              throw new Malformed("bad \\u escape", pos + i);
            }
            v = v * 16 + d;
          }
          pos += 4;
          b.append((char) v);
        }
        default -> throw new Malformed("bad escape", pos - 1);
      }
    }
  }

  private BigDecimal number() throws Malformed {
    int start = pos;
    if (peek() == '-') {
      pos++;
    }
    if (peek() == '0') {
      pos++;
    } else if (isDigit(peek())) {
      while (isDigit(peek())) {
        pos++;
      }
    } else {
      throw new Malformed("bad number", pos);
    }
    if (peek() == '.') {
      pos++;
      if (!isDigit(peek())) {
        throw new Malformed("bad fraction", pos);
      }
      while (isDigit(peek())) {
        pos++;
      }
    }
    if (peek() == 'e' || peek() == 'E') {
      pos++;
      if (peek() == '+' || peek() == '-') {
        pos++;
      }
      if (!isDigit(peek())) {
        throw new Malformed("bad exponent", pos);
      }
      int expStart = pos;
      while (isDigit(peek())) {
        pos++;
      }
      if (pos - expStart > 4) {
        // Refuse exponents like 1e999999999 that would make BigDecimal work hard downstream.
        throw new Malformed("exponent too large", expStart);
      }
    }
    if (pos - start > 64) {
      throw new Malformed("number too long", start);
    }
    return new BigDecimal(s.substring(start, pos));
  }

  private void literal(String word) throws Malformed {
    if (!s.startsWith(word, pos)) {
      throw new Malformed("unexpected literal", pos);
    }
    pos += word.length();
  }

  private void expect(char c) throws Malformed {
    if (peek() != c) {
      throw new Malformed("expected '" + c + "'", pos);
    }
    pos++;
  }

  private char peek() {
    return pos < s.length() ? s.charAt(pos) : '\0';
  }

  private static boolean isDigit(char c) {
    return c >= '0' && c <= '9';
  }

  private void skipWs() {
    while (pos < s.length()) {
      char c = s.charAt(pos);
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
        return;
      }
      pos++;
    }
  }

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
