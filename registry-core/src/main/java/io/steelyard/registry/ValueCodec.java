package io.steelyard.registry;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;

/**
 * Reads and writes instance values in the three formats of the registry contract.
 *
 * <table>
 *   <caption>Formats</caption>
 *   <tr><th>format</th><th>example</th></tr>
 *   <tr><td>{@link ValueFormat#PIPE}</td><td>{@code 10.0.0.7:50051|5}</td></tr>
 *   <tr><td>{@link ValueFormat#PLAIN}</td><td>{@code 10.0.0.7:50051} (weight = default)</td></tr>
 *   <tr><td>{@link ValueFormat#JSON}</td>
 *       <td>{@code {"Op":0,"Addr":"10.0.0.7:50051","Metadata":{"weight":5,"zone":"a"}}}</td></tr>
 * </table>
 *
 * <p>{@link #decode} never throws: anything it does not understand is a {@link
 * DecodedValue.Rejected} with a reason. {@link #encode} writes JSON byte-identical to Go's {@code
 * encoding/json} for etcd's {@code endpoints.Update} (fields Op, Addr, Metadata; metadata keys
 * sorted as Go sorts map keys; no whitespace). Stateless and thread-safe.
 */
public final class ValueCodec {

  /** The metadata key that carries the weight in the JSON format, {@value}. */
  public static final String WEIGHT_METADATA_KEY = "weight";

  /** Values longer than this many bytes are refused without being parsed, {@value}. */
  public static final int MAX_VALUE_BYTES = 16 * 1024;

  private ValueCodec() {}

  /** Decodes one etcd value. Never throws; {@code null} is rejected. */
  public static DecodedValue decode(byte[] value) {
    try {
      return decodeOrThrow(value);
    } catch (RuntimeException e) {
      // Defensive: the parsers below are written not to throw, but the watch path must never
      // see an exception from a value, whatever it holds.
      return new DecodedValue.Rejected("unreadable value: " + e);
    }
  }

  private static DecodedValue decodeOrThrow(byte[] value) {
    if (value == null || value.length == 0) {
      return new DecodedValue.Rejected("empty value");
    }
    if (value.length > MAX_VALUE_BYTES) {
      return new DecodedValue.Rejected(
          "value of " + value.length + " bytes (expected: at most " + MAX_VALUE_BYTES + ")");
    }
    String text;
    try {
      text =
          StandardCharsets.UTF_8
              .newDecoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .onUnmappableCharacter(CodingErrorAction.REPORT)
              .decode(ByteBuffer.wrap(value))
              .toString();
    } catch (CharacterCodingException e) {
      return new DecodedValue.Rejected("value is not valid UTF-8");
    }
    text = text.strip();
    if (text.startsWith("{")) {
      return decodeJson(text);
    }
    int bar = text.indexOf('|');
    if (bar < 0) {
      if (!Validation.isValidAddress(text)) {
        return new DecodedValue.Rejected("plain value: bad address " + Validation.quote(text));
      }
      return new DecodedValue.Accepted(text, Validation.DEFAULT_WEIGHT, Map.of(), ValueFormat.PLAIN);
    }
    if (text.indexOf('|', bar + 1) >= 0) {
      return new DecodedValue.Rejected(
          "pipe value: more than one '|' in " + Validation.quote(text));
    }
    String address = text.substring(0, bar);
    String weightText = text.substring(bar + 1);
    if (!Validation.isValidAddress(address)) {
      return new DecodedValue.Rejected("pipe value: bad address " + Validation.quote(address));
    }
    Integer weight = parseWeight(weightText);
    if (weight == null) {
      return new DecodedValue.Rejected(
          "pipe value: weight " + Validation.quote(weightText)
              + " (expected: an integer 0.." + Validation.MAX_WEIGHT + ")");
    }
    return new DecodedValue.Accepted(address, weight, Map.of(), ValueFormat.PIPE);
  }

  private static DecodedValue decodeJson(String text) {
    Object root;
    try {
      root = Json.parse(text);
    } catch (Json.Malformed e) {
      return new DecodedValue.Rejected("json value: " + e.getMessage());
    }
    if (!(root instanceof Map<?, ?> obj)) {
      return new DecodedValue.Rejected("json value: not an object");
    }
    Object op = obj.get("Op");
    if (op != null && !(op instanceof BigDecimal n && n.signum() == 0)) {
      // Go's endpoints.Update: Op 0 is Add, 1 is Delete; a stored value is always an Add.
      return new DecodedValue.Rejected("json value: Op " + Json.toText(op) + " (expected: 0)");
    }
    if (!(obj.get("Addr") instanceof String address)) {
      return new DecodedValue.Rejected("json value: Addr missing or not a string");
    }
    if (!Validation.isValidAddress(address)) {
      return new DecodedValue.Rejected("json value: bad Addr " + Validation.quote(address));
    }
    int weight = Validation.DEFAULT_WEIGHT;
    Map<String, String> metadata = new TreeMap<>();
    // Go's Metadata is interface{}: null or any JSON value. Only an object carries a weight and
    // metadata; anything else is ignored rather than losing a usable address.
    if (obj.get("Metadata") instanceof Map<?, ?> md) {
      for (Map.Entry<?, ?> e : md.entrySet()) {
        String k = (String) e.getKey();
        Object v = e.getValue();
        if (k.equals(WEIGHT_METADATA_KEY)) {
          Integer w = v instanceof BigDecimal n ? weightOf(n) : v instanceof String str ? parseWeight(str) : null;
          if (w == null) {
            return new DecodedValue.Rejected(
                "json value: Metadata.weight " + Validation.quote(Json.toText(v))
                    + " (expected: an integer 0.." + Validation.MAX_WEIGHT + ")");
          }
          weight = w;
        } else if (v instanceof String str) {
          metadata.put(k, str);
        } else if (v != Json.NULL) {
          metadata.put(k, Json.toText(v));
        }
      }
    }
    return new DecodedValue.Accepted(address, weight, metadata, ValueFormat.JSON);
  }

  private static Integer parseWeight(String s) {
    if (s.isEmpty() || s.length() > 7) {
      return null;
    }
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < '0' || c > '9') {
        return null;
      }
    }
    int w = Integer.parseInt(s);
    return Validation.isValidWeight(w) ? w : null;
  }

  private static Integer weightOf(BigDecimal n) {
    if (n.compareTo(BigDecimal.ZERO) < 0 || n.compareTo(BigDecimal.valueOf(Validation.MAX_WEIGHT)) > 0) {
      return null;
    }
    try {
      return n.intValueExact();
    } catch (ArithmeticException notIntegral) {
      // 5.0 is integral and passes intValueExact after stripping; 5.5 is refused.
      try {
        return n.stripTrailingZeros().intValueExact();
      } catch (ArithmeticException e) {
        return null;
      }
    }
  }

  /** Encodes {@code instance} in {@code format}, as UTF-8 bytes. */
  public static byte[] encode(ServiceInstance instance, ValueFormat format) {
    return encodeToString(instance, format).getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Encodes {@code instance} in {@code format}. {@link ValueFormat#PLAIN} cannot carry a weight
   * or metadata, so it is refused unless the instance has the default weight and no metadata.
   */
  public static String encodeToString(ServiceInstance instance, ValueFormat format) {
    switch (format) {
      case PIPE:
        if (!instance.metadata().isEmpty()) {
          throw new IllegalArgumentException(
              "format: PIPE cannot carry metadata " + instance.metadata() + " (expected: JSON)");
        }
        return instance.address() + "|" + instance.weight();
      case PLAIN:
        if (instance.weight() != Validation.DEFAULT_WEIGHT || !instance.metadata().isEmpty()) {
          throw new IllegalArgumentException(
              "format: PLAIN cannot carry weight " + instance.weight() + " or metadata"
                  + " (expected: PIPE or JSON)");
        }
        return instance.address();
      case JSON:
        return encodeJson(instance);
      default:
        throw new AssertionError(format);
    }
  }

  private static String encodeJson(ServiceInstance instance) {
    // Go's encoding/json writes map keys sorted by their UTF-8 bytes; "weight" sits among them.
    TreeMap<String, Object> md = new TreeMap<>(ValueCodec::compareUtf8);
    md.putAll(instance.metadata());
    md.put(WEIGHT_METADATA_KEY, instance.weight());
    StringBuilder b = new StringBuilder(64 + instance.address().length());
    b.append("{\"Op\":0,\"Addr\":");
    Json.writeGoString(b, instance.address());
    b.append(",\"Metadata\":{");
    boolean first = true;
    for (Map.Entry<String, Object> e : md.entrySet()) {
      if (!first) {
        b.append(',');
      }
      first = false;
      Json.writeGoString(b, e.getKey());
      b.append(':');
      if (e.getValue() instanceof Integer w) {
        b.append(w.intValue());
      } else {
        Json.writeGoString(b, (String) e.getValue());
      }
    }
    return b.append("}}").toString();
  }

  /** Orders strings by their UTF-8 bytes, which is Go's string order. */
  static int compareUtf8(String a, String b) {
    int n = Math.min(a.length(), b.length());
    for (int i = 0; i < n; i++) {
      int ca = a.codePointAt(i);
      int cb = b.codePointAt(i);
      if (ca != cb) {
        return Integer.compare(ca, cb); // code point order == UTF-8 byte order
      }
      if (Character.isSupplementaryCodePoint(ca)) {
        i++;
      }
    }
    return Integer.compare(a.length(), b.length());
  }
}
