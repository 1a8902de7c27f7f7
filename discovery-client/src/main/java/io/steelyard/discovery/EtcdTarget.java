package io.steelyard.discovery;

import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.Validation;
import java.net.URI;
import java.util.function.Supplier;

/**
 * A parsed {@code etcd:} target: {@code etcd:///SERVICE} (the provider's etcd) or {@code
 * etcd://host1:2379,host2:2379/SERVICE} (that etcd, plain HTTP).
 */
record EtcdTarget(EtcdConnection connection, String service) {

  static final String EXPECTED = "expected: etcd:///SERVICE or etcd://HOST:PORT[,HOST:PORT...]/SERVICE";

  /**
   * Parses {@code target}; {@code defaultConnection} is asked only for targets without an
   * authority.
   *
   * @throws IllegalArgumentException naming the target and what was expected
   */
  static EtcdTarget parse(URI target, Supplier<EtcdConnection> defaultConnection) {
    String text = target.toString();
    if (!"etcd".equals(target.getScheme())) {
      throw new IllegalArgumentException("target " + Validation.quote(text) + ": scheme (" + EXPECTED + ")");
    }
    if (target.isOpaque() || target.getPath() == null || !target.getPath().startsWith("/")) {
      throw new IllegalArgumentException("target " + Validation.quote(text) + ": no service path (" + EXPECTED + ")");
    }
    if (target.getRawQuery() != null || target.getRawFragment() != null) {
      throw new IllegalArgumentException(
          "target " + Validation.quote(text) + ": query or fragment not supported (" + EXPECTED + ")");
    }
    String service = target.getPath().substring(1);
    if (!Validation.isValidServiceName(service)) {
      throw new IllegalArgumentException(
          "target " + Validation.quote(text) + ": service name " + Validation.quote(service)
              + " (expected: [A-Za-z0-9][A-Za-z0-9._-]{0,252}, not . or ..; " + EXPECTED + ")");
    }
    String authority = target.getRawAuthority();
    EtcdConnection connection;
    if (authority == null || authority.isEmpty()) {
      connection = defaultConnection.get();
    } else {
      if (authority.contains("@")) {
        throw new IllegalArgumentException(
            "target " + Validation.quote(text) + ": credentials in the target are not supported;"
                + " configure them on the provider (" + EXPECTED + ")");
      }
      try {
        connection = EtcdConnection.of(authority);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            "target " + Validation.quote(text) + ": etcd endpoints " + Validation.quote(authority)
                + " (" + EXPECTED + "): " + e.getMessage(), e);
      }
    }
    return new EtcdTarget(connection, service);
  }
}
