package io.steelyard.registry;

import java.util.regex.Pattern;
import javax.annotation.Nullable;

/**
 * The validation rules of the registry contract, shared by the agent, the CLI and the resolver.
 * Every {@code check*} method throws {@link IllegalArgumentException} whose message names the
 * offending input and what was expected, in the form {@code "service: '../x' (expected: ...)"}.
 * The {@code is*} variants never throw.
 */
public final class Validation {

  /** The largest accepted weight. */
  public static final int MAX_WEIGHT = 1_000_000;

  /** Weight of an instance whose value does not carry one. */
  public static final int DEFAULT_WEIGHT = 1;

  // Service names, host names and ports are checked by hand rather than by regular expressions:
  // a watcher checks every value it decodes (five matches per instance, 100,000 per listing of a
  // large service), and the regexes were most of the decoding time. ValidationTest holds the
  // regexes they replace, [A-Za-z0-9][A-Za-z0-9._-]{0,252} for a service name and RFC 1123 host
  // names (which also cover dotted IPv4 literals), and compares both on generated input.

  // One prefix segment: the same alphabet as service names; "." and ".." are refused separately.
  private static final Pattern SEGMENT = Pattern.compile("[A-Za-z0-9._-]{1,253}");
  private static final Pattern IPV6 = Pattern.compile("[0-9A-Fa-f:.]{2,45}(?:%[A-Za-z0-9._-]{1,32})?");

  private Validation() {}

  /** Returns {@code service} if it is a valid service name, else throws naming it. */
  public static String checkServiceName(String service) {
    if (!isValidServiceName(service)) {
      throw new IllegalArgumentException(
          "service: " + quote(service)
              + " (expected: 1..253 characters of [A-Za-z0-9._-], starting with a letter or digit)");
    }
    return service;
  }

  /** Whether {@code service} is a valid service name; {@code null} is not. */
  public static boolean isValidServiceName(String service) {
    // The leading [A-Za-z0-9] already refuses "." and ".."; "/" and whitespace are outside the class.
    if (service == null || service.isEmpty() || service.length() > 253 || !isAlnum(service.charAt(0))) {
      return false;
    }
    for (int i = 1; i < service.length(); i++) {
      char c = service.charAt(i);
      if (!isAlnum(c) && c != '.' && c != '_' && c != '-') {
        return false;
      }
    }
    return true;
  }

  private static boolean isAlnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  }

  /** An RFC 1123 host name: 1..253 characters, dot-separated labels of 1..63 letters, digits and inner hyphens. */
  static boolean isHostName(String host) {
    int n = host.length();
    if (n == 0 || n > 253) {
      return false;
    }
    int labelStart = 0;
    for (int i = 0; i <= n; i++) {
      if (i == n || host.charAt(i) == '.') {
        int length = i - labelStart;
        if (length == 0 || length > 63
            || !isAlnum(host.charAt(labelStart)) || !isAlnum(host.charAt(i - 1))) {
          return false;
        }
        labelStart = i + 1;
      } else if (!isAlnum(host.charAt(i)) && host.charAt(i) != '-') {
        return false;
      }
    }
    return true;
  }

  /** 1..5 ASCII digits. */
  static boolean isPortDigits(String port) {
    int n = port.length();
    if (n == 0 || n > 5) {
      return false;
    }
    for (int i = 0; i < n; i++) {
      char c = port.charAt(i);
      if (c < '0' || c > '9') {
        return false;
      }
    }
    return true;
  }

  /** Returns {@code address} if it is {@code host:port} or {@code [ipv6]:port}, else throws. */
  public static String checkAddress(String address) {
    String reason = addressProblem(address);
    if (reason != null) {
      throw new IllegalArgumentException(
          "address: " + quote(address) + " (expected: host:port or [ipv6]:port, " + reason + ")");
    }
    return address;
  }

  /** Whether {@code address} is {@code host:port} or {@code [ipv6]:port} with port 1..65535. */
  public static boolean isValidAddress(String address) {
    return addressProblem(address) == null;
  }

  /** Returns {@code weight} if it is in {@code 0..MAX_WEIGHT}, else throws naming it. */
  public static int checkWeight(long weight) {
    if (weight < 0 || weight > MAX_WEIGHT) {
      throw new IllegalArgumentException(
          "weight: " + weight + " (expected: 0.." + MAX_WEIGHT + ")");
    }
    return (int) weight;
  }

  /** Whether {@code weight} is in {@code 0..MAX_WEIGHT}. */
  public static boolean isValidWeight(long weight) {
    return weight >= 0 && weight <= MAX_WEIGHT;
  }

  /**
   * Returns the normalised key prefix: trailing slashes removed, segments checked. A prefix is
   * {@code /seg/seg} or {@code seg/seg} (the leading slash is optional, for interop with Go's
   * etcd resolver, whose keys have none); each segment uses the service-name alphabet and may not
   * be {@code .} or {@code ..}.
   */
  public static String checkPrefix(String prefix) {
    if (prefix == null) {
      throw new IllegalArgumentException("prefix: null (expected: a key prefix like /services)");
    }
    String p = prefix;
    while (p.length() > 1 && p.endsWith("/")) {
      p = p.substring(0, p.length() - 1);
    }
    String body = p.startsWith("/") ? p.substring(1) : p;
    boolean ok = !body.isEmpty();
    if (ok) {
      for (String seg : body.split("/", -1)) {
        if (!SEGMENT.matcher(seg).matches() || seg.equals(".") || seg.equals("..")) {
          ok = false;
          break;
        }
      }
    }
    if (!ok) {
      throw new IllegalArgumentException(
          "prefix: " + quote(prefix)
              + " (expected: /segment[/segment...] of [A-Za-z0-9._-], no '.' or '..' segments)");
    }
    return p;
  }

  private static String addressProblem(String address) {
    if (address == null || address.isEmpty()) {
      return "got nothing";
    }
    if (address.length() > 300) {
      return "too long";
    }
    String host;
    String port;
    if (address.startsWith("[")) {
      int close = address.indexOf(']');
      if (close < 0 || close + 1 >= address.length() || address.charAt(close + 1) != ':') {
        return "missing ]:port";
      }
      host = address.substring(1, close);
      port = address.substring(close + 2);
      if (!IPV6.matcher(host).matches() || host.indexOf(':') < 0) {
        return "bad IPv6 literal";
      }
    } else {
      int colon = address.lastIndexOf(':');
      if (colon <= 0) {
        return "missing :port";
      }
      host = address.substring(0, colon);
      port = address.substring(colon + 1);
      if (host.indexOf(':') >= 0) {
        return "IPv6 literals need [brackets]";
      }
      if (!isHostName(host)) {
        return "bad host";
      }
    }
    if (!isPortDigits(port)) {
      return "bad port";
    }
    int p = Integer.parseInt(port);
    if (p < 1 || p > 65535) {
      return "port out of 1..65535";
    }
    return null;
  }

  /** Longest stretch of input {@link #quote} shows; enough for any key of a sane layout. */
  static final int QUOTE_MAX_CHARS = 200;

  /**
   * Quotes text that came from outside (a key, a value, a target, an argument) for a log line or
   * an error message: in single quotes, control characters and line separators escaped Java-style
   * (backslash, {@code u}, four hex digits) so that a hostile key cannot forge or split log
   * lines, and cut after
   * {@value #QUOTE_MAX_CHARS} characters with {@code ...}. {@code null} becomes {@code null}.
   *
   * <pre>{@code
   * logger.warn("Skipping malformed value of key {}", Validation.quote(key));
   * }</pre>
   */
  public static String quote(@Nullable String s) {
    if (s == null) {
      return "null";
    }
    int shown = Math.min(s.length(), QUOTE_MAX_CHARS);
    StringBuilder b = new StringBuilder(shown + 5).append('\'');
    for (int i = 0; i < shown; i++) {
      char c = s.charAt(i);
      if (Character.isISOControl(c) || c == '\u2028' || c == '\u2029') {
        b.append(String.format("\\u%04x", (int) c));
      } else {
        b.append(c);
      }
    }
    if (s.length() > shown) {
      b.append("...");
    }
    return b.append('\'').toString();
  }
}
