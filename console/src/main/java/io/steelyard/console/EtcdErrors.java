package io.steelyard.console;

import io.steelyard.registry.RegistryException;

/**
 * Names an etcd failure the way {@code steelyard} prints it on stderr: "etcd unreachable at
 * ENDPOINTS: ..." only when etcd could not be reached, "etcd at ENDPOINTS: ..." when it answered
 * and refused (permission, authentication, TLS, a limit), the bare message otherwise (not
 * registered, conflict, malformed value).
 */
final class EtcdErrors {

  private final String endpoints;

  EtcdErrors(String endpoints) {
    this.endpoints = endpoints;
  }

  String describe(Throwable failure) {
    Throwable e = unwrap(failure);
    if (e instanceof RegistryException re) {
      return where(re.kind()) + oneLine(re.getMessage());
    }
    return "unexpected error: " + oneLine(String.valueOf(e));
  }

  private String where(RegistryException.Kind kind) {
    if (kind == RegistryException.Kind.UNAVAILABLE) {
      return "etcd unreachable at " + endpoints + ": ";
    }
    return kind.refused() ? "etcd at " + endpoints + ": " : "";
  }

  static Throwable unwrap(Throwable e) {
    Throwable t = e;
    while ((t instanceof java.util.concurrent.CompletionException
            || t instanceof java.util.concurrent.ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  static String oneLine(String s) {
    return s == null ? "" : s.replaceAll("\\s*[\\r\\n]+\\s*", " ").strip();
  }
}
