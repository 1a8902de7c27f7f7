package io.steelyard.discovery;

import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.Validation;
import java.net.URI;
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
 */
record EtcdTarget(EtcdConnection connection, String service) {

  /** The only query parameter: the etcd members, comma-separated {@code HOST:PORT}s. */
  static final String ENDPOINTS_PARAM = "endpoints";

  static final String EXPECTED = "expected: etcd:///SERVICE, etcd:///SERVICE?endpoints=HOST:PORT[,HOST:PORT...]"
      + " or etcd://HOST:PORT/SERVICE";

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
    String fromQuery = endpointsParam(text, target.getRawQuery());
    if (authority != null && !authority.isEmpty()) {
      if (fromQuery != null) {
        throw invalid(text, "etcd endpoints both in the authority and in the query");
      }
      if (authority.contains("@")) {
        throw invalid(text, "credentials in the target are not supported; configure them on the provider");
      }
      return new EtcdTarget(connection(text, authority), service);
    }
    return new EtcdTarget(fromQuery != null ? connection(text, fromQuery) : defaultConnection.get(), service);
  }

  /** The value of {@code endpoints=} in {@code rawQuery}, percent-decoded; null without a query. */
  @Nullable
  private static String endpointsParam(String text, @Nullable String rawQuery) {
    if (rawQuery == null) {
      return null;
    }
    String prefix = ENDPOINTS_PARAM + "=";
    if (!rawQuery.startsWith(prefix) || rawQuery.indexOf('&') >= 0 || rawQuery.length() == prefix.length()) {
      throw invalid(text, "query " + Validation.quote(rawQuery) + " (only " + prefix + "HOST:PORT[,HOST:PORT...])");
    }
    // The raw query came from a valid URI, so it re-parses; getQuery() percent-decodes it.
    return URI.create("x:///?" + rawQuery.substring(prefix.length())).getQuery();
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
