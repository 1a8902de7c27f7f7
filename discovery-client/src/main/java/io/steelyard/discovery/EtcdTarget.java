package io.steelyard.discovery;

import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.Localities;
import io.steelyard.registry.Validation;
import java.net.URI;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import javax.annotation.Nullable;

/**
 * A parsed {@code etcd:} target, in one of three forms:
 *
 * <ul>
 *   <li>{@code etcd:///SERVICE}: the provider's etcd;
 *   <li>{@code etcd:///SERVICE?endpoints=HOST:PORT,HOST:PORT}: those etcd members, plain HTTP;
 *   <li>{@code etcd://HOST:PORT/SERVICE}: that one member, plain HTTP. Several members in the
 *       authority ({@code etcd://h1:2379,h2:2379/SERVICE}) are accepted here, but grpc-java 1.85
 *       never hands such a target to a provider: it parses targets as RFC 3986 URIs (unless
 *       {@code GRPC_ENABLE_RFC3986_URIS=false}), where a host list with ports is no authority, and
 *       fails the channel's build with "Could not find a NameResolverProvider". Hence the query
 *       form, valid RFC 3986 and RFC 2396 alike.
 * </ul>
 *
 * <p>Any form may add {@code zone=ZONE} to its query ({@code etcd:///greeter?zone=eu-1a}, {@code
 * etcd:///greeter?endpoints=h1:2379&zone=eu-1a}): the caller's own zone, for zone-aware routing.
 *
 * @param zone the caller's zone named in the target, or null
 */
record EtcdTarget(EtcdConnection connection, String service, @Nullable String zone) {

  /** Query parameter: the etcd members, comma-separated {@code HOST:PORT}s. */
  static final String ENDPOINTS_PARAM = "endpoints";

  /** Query parameter: the caller's zone. */
  static final String ZONE_PARAM = "zone";

  static final String EXPECTED = "expected: etcd:///SERVICE, etcd:///SERVICE?endpoints=HOST:PORT[,HOST:PORT...]"
      + " or etcd://HOST:PORT/SERVICE, each optionally with zone=ZONE in the query";

  /**
   * Parses {@code target}; {@code defaultConnection} is asked only for targets that name no
   * endpoints.
   *
   * @throws IllegalArgumentException naming the target and what was expected
   */
  static EtcdTarget parse(URI target, Supplier<EtcdConnection> defaultConnection) {
    String text = target.toString();
    if (!"etcd".equals(target.getScheme())) {
      throw invalid(text, "scheme");
    }
    if (target.isOpaque() || target.getPath() == null || !target.getPath().startsWith("/")) {
      throw invalid(text, "no service path");
    }
    if (target.getRawFragment() != null) {
      throw invalid(text, "fragment not supported");
    }
    String service = target.getPath().substring(1);
    if (!Validation.isValidServiceName(service)) {
      throw new IllegalArgumentException(
          "target " + Validation.quote(text) + ": service name " + Validation.quote(service)
              + " (expected: [A-Za-z0-9][A-Za-z0-9._-]{0,252}, not . or ..; " + EXPECTED + ")");
    }
    String authority = target.getRawAuthority();
    Map<String, String> query = queryParams(text, target.getRawQuery());
    String fromQuery = query.get(ENDPOINTS_PARAM);
    String zone = query.get(ZONE_PARAM);
    if (zone != null) {
      try {
        Localities.checkName("zone", zone);
      } catch (IllegalArgumentException e) {
        throw invalid(text, e.getMessage());
      }
    }
    if (authority != null && !authority.isEmpty()) {
      if (fromQuery != null) {
        throw invalid(text, "etcd endpoints both in the authority and in the query");
      }
      if (authority.contains("@")) {
        throw invalid(text, "credentials in the target are not supported; configure them on the provider");
      }
      return new EtcdTarget(connection(text, authority), service, zone);
    }
    return new EtcdTarget(
        fromQuery != null ? connection(text, fromQuery) : defaultConnection.get(), service, zone);
  }

  /**
   * The {@code endpoints=} and {@code zone=} values of {@code rawQuery}, percent-decoded; empty
   * without a query. Any other parameter, an empty value or a repeated one is refused.
   */
  private static Map<String, String> queryParams(String text, @Nullable String rawQuery) {
    Map<String, String> params = new LinkedHashMap<>();
    if (rawQuery == null) {
      return params;
    }
    for (String pair : rawQuery.split("&", -1)) {
      int eq = pair.indexOf('=');
      String name = eq < 0 ? pair : pair.substring(0, eq);
      if (eq < 0 || eq == pair.length() - 1
          || !(name.equals(ENDPOINTS_PARAM) || name.equals(ZONE_PARAM))
          || params.containsKey(name)) {
        throw invalid(text, "query " + Validation.quote(rawQuery)
            + " (only " + ENDPOINTS_PARAM + "=HOST:PORT[,HOST:PORT...] and " + ZONE_PARAM + "=ZONE, each once)");
      }
      // The raw query came from a valid URI, so it re-parses; getQuery() percent-decodes it.
      params.put(name, URI.create("x:///?" + pair.substring(eq + 1)).getQuery());
    }
    return params;
  }

  /** Plain-HTTP members: a target carries neither a scheme per member nor TLS settings. */
  private static EtcdConnection connection(String text, String hostPorts) {
    if (hostPorts.contains("://")) {
      throw invalid(text, "etcd endpoints " + Validation.quote(hostPorts)
          + " are plain HOST:PORTs; for TLS or credentials configure them on the provider");
    }
    try {
      return EtcdConnection.of(hostPorts);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(
          "target " + Validation.quote(text) + ": etcd endpoints " + Validation.quote(hostPorts)
              + " (" + EXPECTED + "): " + e.getMessage(), e);
    }
  }

  private static IllegalArgumentException invalid(String text, String why) {
    return new IllegalArgumentException("target " + Validation.quote(text) + ": " + why + " (" + EXPECTED + ")");
  }
}
