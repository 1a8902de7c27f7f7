package io.steelyard.registry;

import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import javax.annotation.Nullable;

/**
 * How an etcd failure reads to an operator, in one line: {@code etcd unreachable at ENDPOINTS:
 * ...} only when etcd could not be reached, {@code etcd at ENDPOINTS: ...} when it answered and
 * refused (permission, authentication, TLS, a limit: {@link RegistryException.Kind#refused()}),
 * the bare message otherwise (not registered, conflict, malformed value). {@code bin/steelyard}
 * prints it after {@code steelyard: }, and the console shows it beside the action that failed.
 *
 * <pre>{@code
 * err.println("steelyard: " + EtcdFailureText.describe(failure, connection.endpointsString()));
 * }</pre>
 *
 * <p>Stateless and thread-safe.
 */
public final class EtcdFailureText {

  private EtcdFailureText() {}

  /**
   * One line for {@code failure}, unwrapped from the {@link CompletionException}s and {@link
   * ExecutionException}s of a future. A failure that is not a {@link RegistryException} reads
   * {@code unexpected error: ...}.
   *
   * @param endpoints where etcd was looked for, or null when no connection was made yet
   */
  public static String describe(Throwable failure, @Nullable String endpoints) {
    Throwable e = unwrap(failure);
    if (e instanceof RegistryException re) {
      return where(re.kind(), endpoints) + oneLine(re.getMessage());
    }
    return "unexpected error: " + oneLine(String.valueOf(e));
  }

  /**
   * Which etcd a failure of {@code kind} is about, when it is about etcd ({@code ""} otherwise, and
   * when {@code endpoints} is null): "unreachable" only when it is, since a refused login,
   * permission or certificate is not a network problem.
   */
  public static String where(RegistryException.Kind kind, @Nullable String endpoints) {
    if (endpoints == null) {
      return "";
    }
    if (kind == RegistryException.Kind.UNAVAILABLE) {
      return "etcd unreachable at " + endpoints + ": ";
    }
    return kind.refused() ? "etcd at " + endpoints + ": " : "";
  }

  /** {@code s} on one line: each line break, with the blanks around it, becomes one space. */
  public static String oneLine(@Nullable String s) {
    return s == null ? "" : s.replaceAll("\\s*[\\r\\n]+\\s*", " ").strip();
  }

  /** The failure inside the completion and execution wrappers of a future. */
  public static Throwable unwrap(Throwable failure) {
    Throwable t = failure;
    while ((t instanceof CompletionException || t instanceof ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }
}
