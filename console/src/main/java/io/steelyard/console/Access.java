package io.steelyard.console;

import com.sun.net.httpserver.Headers;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.List;
import java.util.Locale;
import javax.annotation.Nullable;

/**
 * Who may use the console and how writes must arrive.
 *
 * <ul>
 *   <li><b>Token.</b> With a token, every request must carry it: {@code Authorization: Bearer
 *       TOKEN}, or the cookie a browser gets from opening {@code /?token=TOKEN} once (HttpOnly,
 *       SameSite=Strict, so no other site's page can send it). Compared in constant time.
 *   <li><b>Host.</b> Without a token or TLS the console only listens on loopback; it then refuses
 *       requests whose {@code Host} is not a loopback name, so a page of another site cannot
 *       reach it by pointing its own DNS name at 127.0.0.1 (DNS rebinding).
 *   <li><b>Writes.</b> A write must carry the header {@value #WRITE_HEADER} (a cross-site page
 *       cannot add it without a CORS preflight, which the console never grants) and, when the
 *       browser names an {@code Origin}, come from the console's own origin.
 * </ul>
 */
final class Access {

  static final String COOKIE = "steelyard-console-token";
  static final String WRITE_HEADER = "X-Steelyard-Console";

  @Nullable private final byte[] token;
  private final boolean loopbackOnly;
  private final boolean secure;

  /**
   * @param loopbackOnly the console listens on loopback only (no token, no TLS): Host must then
   *     name loopback
   * @param secure served over TLS: the token cookie is marked Secure
   */
  Access(@Nullable String token, boolean loopbackOnly, boolean secure) {
    this.token = token == null ? null : token.getBytes(StandardCharsets.UTF_8);
    this.loopbackOnly = loopbackOnly;
    this.secure = secure;
  }

  /** The cookie that carries {@code token} for a browser that opened the token link. */
  String cookieFor(String token) {
    return COOKIE + "=" + token + "; Path=/; HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "");
  }

  boolean tokenRequired() {
    return token != null;
  }

  /** Whether {@code offered} is the token; constant time in the token's contents. */
  boolean matches(@Nullable String offered) {
    if (token == null) {
      return true;
    }
    if (offered == null) {
      return false;
    }
    return MessageDigest.isEqual(token, offered.getBytes(StandardCharsets.UTF_8));
  }

  /** Whether the request carries the token (header or cookie); true when none is set. */
  boolean authorized(Headers headers) {
    if (token == null) {
      return true;
    }
    String auth = headers.getFirst("Authorization");
    if (auth != null && auth.regionMatches(true, 0, "Bearer ", 0, 7)) {
      return matches(auth.substring(7).strip());
    }
    return matches(cookie(headers.get("Cookie")));
  }

  @Nullable
  static String cookie(@Nullable List<String> cookieHeaders) {
    if (cookieHeaders == null) {
      return null;
    }
    for (String header : cookieHeaders) {
      for (String part : header.split(";")) {
        String p = part.strip();
        if (p.startsWith(COOKIE + "=")) {
          return p.substring(COOKIE.length() + 1);
        }
      }
    }
    return null;
  }

  /**
   * When loopback-only, the Host a browser names must be loopback: {@code 127.x}, {@code [::1]}
   * or {@code localhost}, with any port.
   */
  boolean hostAllowed(Headers headers) {
    if (!loopbackOnly) {
      return true;
    }
    String host = headers.getFirst("Host");
    if (host == null) {
      return true; // HTTP/1.0 clients without Host cannot be a rebinding browser
    }
    String name = host.toLowerCase(Locale.ROOT);
    if (name.startsWith("[")) {
      int end = name.indexOf(']');
      name = end < 0 ? name : name.substring(0, end + 1);
    } else if (name.indexOf(':') >= 0) {
      name = name.substring(0, name.indexOf(':'));
    }
    return name.equals("localhost") || name.equals("[::1]") || name.startsWith("127.");
  }

  /**
   * Why a write is refused, or null when it is a same-origin request of the console's page: it
   * must carry {@value #WRITE_HEADER}, and an {@code Origin} (sent by browsers on every POST)
   * must name the {@code Host} the request was sent to.
   */
  @Nullable
  String writeRefusal(Headers headers) {
    if (headers.getFirst(WRITE_HEADER) == null) {
      return "write refused: the request lacks the " + WRITE_HEADER + " header (cross-site request?)";
    }
    String origin = headers.getFirst("Origin");
    if (origin == null) {
      return null; // not a browser, or a same-origin GET-like fetch: the header suffices
    }
    String host = headers.getFirst("Host");
    try {
      URI o = URI.create(origin);
      String originHost = o.getRawAuthority();
      if (host != null && originHost != null && originHost.equalsIgnoreCase(host)) {
        return null;
      }
    } catch (IllegalArgumentException e) {
      // an unreadable Origin is not our origin
    }
    return "write refused: Origin " + origin + " is not this console (" + host + ")";
  }
}
