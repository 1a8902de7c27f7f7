package io.steelyard.registry.internal;

import static java.util.Objects.requireNonNull;

import io.etcd.jetcd.common.exception.EtcdException;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import io.netty.handler.ssl.NotSslRecordException;
import io.netty.handler.ssl.SslHandshakeTimeoutException;
import io.steelyard.registry.EtcdFailureText;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.RegistryException.Kind;
import java.security.cert.CertPathBuilderException;
import java.security.cert.CertPathValidatorException;
import java.security.cert.CertificateException;
import java.security.cert.CertificateExpiredException;
import java.security.cert.CertificateNotYetValidException;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import javax.annotation.Nullable;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLHandshakeException;

/**
 * The one place where a failed etcd call becomes a {@link RegistryException}: what kind of
 * failure it is, and the one-line message that names it.
 *
 * <p>Failures are classified by gRPC status code and exception type, never by message text.
 * How jetcd 0.8.6 surfaces each case (read from its sources and provoked against a real etcd in
 * {@code EtcdCallsIT} and {@code EtcdConnectionAuthIT}):
 *
 * <table>
 *   <caption>Classification</caption>
 *   <tr><th>what jetcd delivers</th><th>kind</th></tr>
 *   <tr><td>an {@link SSLException} (not a handshake timeout; {@link ClientCertificateCheck}
 *       adds one when etcd refused the client certificate), netty's {@link
 *       NotSslRecordException} or a {@link CertificateException} anywhere in the cause chain</td>
 *       <td>{@link Kind#TLS}</td></tr>
 *   <tr><td>our own {@link TimeoutException}; UNAVAILABLE, DEADLINE_EXCEEDED (connection refused,
 *       no leader, the call's deadline); CANCELLED (a closed client), UNKNOWN, INTERNAL, ABORTED,
 *       DATA_LOSS; an exception without a status</td><td>{@link Kind#UNAVAILABLE}</td></tr>
 *   <tr><td>NOT_FOUND: etcd's "requested lease not found" (a revoke, put or keepalive of a
 *       lease etcd no longer has; jetcd's keepalive reports a TTL of 0 as an {@code
 *       EtcdException} with this code)</td><td>{@link Kind#NOT_REGISTERED}</td></tr>
 *   <tr><td>PERMISSION_DENIED</td><td>{@link Kind#PERMISSION_DENIED}</td></tr>
 *   <tr><td>UNAUTHENTICATED: jetcd fails the call this way when it cannot get a token (wrong
 *       password: the cause is etcd's INVALID_ARGUMENT), and etcd when a token is invalid. When
 *       the token request itself did not reach etcd (its cause is UNAVAILABLE or
 *       DEADLINE_EXCEEDED), the failure is {@link Kind#UNAVAILABLE}</td>
 *       <td>{@link Kind#UNAUTHENTICATED}</td></tr>
 *   <tr><td>RESOURCE_EXHAUSTED: a response over the client's 4 MiB inbound limit, etcd's
 *       "database space exceeded" (NOSPACE) and "too many requests"; the code does not tell
 *       them apart, the message shows etcd's words</td><td>{@link Kind#LIMIT}</td></tr>
 *   <tr><td>OUT_OF_RANGE (compacted revision; jetcd's {@code CompactedException})</td>
 *       <td>{@link Kind#COMPACTED}</td></tr>
 *   <tr><td>INVALID_ARGUMENT, FAILED_PRECONDITION, ALREADY_EXISTS, UNIMPLEMENTED. etcd answers
 *       an anonymous request to an auth-enabled cluster and a request over its
 *       {@code --max-request-bytes} with INVALID_ARGUMENT; the message shows etcd's words</td>
 *       <td>{@link Kind#REFUSED}</td></tr>
 * </table>
 *
 * <p>To add a case: a {@link Kind} and a line in {@link #classify} and {@link #problem}.
 * Stateless and thread-safe.
 */
public final class EtcdErrors {

  /**
   * etcd's answer to a request without credentials on a cluster with auth enabled, an
   * INVALID_ARGUMENT like many others. etcd's errors are identified by their description
   * ({@code rpctypes.ErrGRPCUserEmpty}; Go's clientv3 maps them the same way), so this one is
   * matched by its exact text.
   */
  static final String ETCD_USER_EMPTY = "etcdserver: user name is empty";

  /** Causes followed at most, against cycles and pathological chains. */
  private static final int MAX_CHAIN = 32;

  private EtcdErrors() {}

  /** Strips the {@link ExecutionException} and {@link CompletionException} layers of futures. */
  public static Throwable unwrap(Throwable t) {
    Throwable c = requireNonNull(t, "t");
    while ((c instanceof ExecutionException || c instanceof CompletionException)
        && c.getCause() != null) {
      c = c.getCause();
    }
    return c;
  }

  /** What kind of failure {@code t} is; a {@link RegistryException} keeps its kind. */
  public static Kind classify(Throwable t) {
    Throwable c = unwrap(t);
    if (c instanceof RegistryException re) {
      return re.kind();
    }
    if (tlsFailure(c) != null) {
      return Kind.TLS;
    }
    Throwable statusCarrier = firstWithCode(c);
    if (statusCarrier == null) {
      // Our own timeout, a cancelled call, a connect exception without a status: etcd did not
      // answer. A refusal always comes with a status code.
      return Kind.UNAVAILABLE;
    }
    Status.Code code = requireNonNull(codeOf(statusCarrier));
    return switch (code) {
      case NOT_FOUND -> Kind.NOT_REGISTERED;
      case PERMISSION_DENIED -> Kind.PERMISSION_DENIED;
      case UNAUTHENTICATED -> {
        Throwable inner = firstWithCode(statusCarrier.getCause());
        Status.Code innerCode = inner == null ? null : codeOf(inner);
        yield innerCode == Status.Code.UNAVAILABLE || innerCode == Status.Code.DEADLINE_EXCEEDED
            ? Kind.UNAVAILABLE // the token request did not reach etcd
            : Kind.UNAUTHENTICATED;
      }
      case RESOURCE_EXHAUSTED -> Kind.LIMIT;
      case OUT_OF_RANGE -> Kind.COMPACTED;
      case INVALID_ARGUMENT ->
          ETCD_USER_EMPTY.equals(descriptionOf(statusCarrier)) ? Kind.UNAUTHENTICATED : Kind.REFUSED;
      case FAILED_PRECONDITION, ALREADY_EXISTS, UNIMPLEMENTED -> Kind.REFUSED;
      case UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED, UNKNOWN, INTERNAL, ABORTED, DATA_LOSS, OK ->
          Kind.UNAVAILABLE;
    };
  }

  /**
   * Whether etcd said it does not know the lease ({@code NOT_FOUND}): the revoke, put or
   * keepalive of a lease that expired or was revoked.
   */
  public static boolean isLeaseNotFound(Throwable t) {
    // A RegistryException carries no code itself: the walk goes on to the jetcd failure in it.
    Throwable c = firstWithCode(unwrap(t));
    return c != null && codeOf(c) == Status.Code.NOT_FOUND;
  }

  /**
   * Whether etcd did not answer in time: our own {@link TimeoutException} (a call's deadline in
   * {@link EtcdCalls}) or gRPC's DEADLINE_EXCEEDED, anywhere in the cause chain. Such a call may
   * still take effect when etcd gets to it.
   */
  public static boolean isTimeout(Throwable t) {
    int depth = 0;
    for (Throwable c = unwrap(t); c != null && depth++ < MAX_CHAIN; c = next(c)) {
      if (c instanceof TimeoutException || codeOf(c) == Status.Code.DEADLINE_EXCEEDED) {
        return true;
      }
    }
    return false;
  }

  /**
   * A failure in one line for a log message without a stack trace: a {@link RegistryException}'s
   * own message (it names the problem and the operation), else the exception itself.
   */
  public static String message(Throwable t) {
    Throwable c = unwrap(t);
    return c instanceof RegistryException ? c.getMessage() : String.valueOf(c);
  }

  /**
   * The {@link RegistryException} for a failed etcd call {@code what} (e.g. {@code "list
   * greeter"}): classified by {@link #classify}, with a one-line message naming the problem and
   * the operation, and {@code t} as the cause. A {@link RegistryException} is returned as is.
   */
  public static RegistryException toRegistryException(String what, Throwable t) {
    requireNonNull(what, "what");
    Throwable c = unwrap(t);
    if (c instanceof RegistryException re) {
      return re;
    }
    Kind kind = classify(c);
    return new RegistryException(kind, message(kind, what, c), c);
  }

  /** The failure of a call etcd did not answer within {@code timeout}. */
  public static RegistryException timedOut(String what, Duration timeout, @Nullable Throwable cause) {
    return new RegistryException(
        Kind.UNAVAILABLE,
        "etcd did not answer within " + timeout.toMillis() + "ms (" + what + ")",
        cause);
  }

  private static String message(Kind kind, String what, Throwable c) {
    if (kind == Kind.UNAVAILABLE) {
      if (c instanceof TimeoutException) {
        return "etcd did not answer " + what + " in time (" + detail(c) + ")";
      }
      if (c instanceof CancellationException) {
        return "etcd call cancelled (" + what + ")";
      }
      return "etcd could not be reached for " + what + " (" + detail(c) + ")";
    }
    String problem = kind == Kind.TLS ? tlsProblem(requireNonNull(tlsFailure(c))) : problem(kind);
    if (kind == Kind.UNAUTHENTICATED && ETCD_USER_EMPTY.equals(descriptionOf(firstWithCode(c)))) {
      problem = "authentication failed: etcd requires a user and password";
    }
    if (tlsFailure(c) instanceof ClientCertificateCheck.RefusedException refused) {
      // The refusal names the file and its dates; the detail is what gRPC saw of it.
      Throwable seen = refused.getCause() != null ? refused.getCause() : firstWithCode(c);
      return refused.getMessage() + " (" + what + ")"
          + (seen != null ? ": " + statusDetail(seen) : "");
    }
    if (tlsFailure(c) instanceof SchemeMismatch.MismatchException) {
      return "etcd refused " + what + ": " + problem; // the problem is the whole story
    }
    return "etcd refused " + what + ": " + problem + " (" + detail(c) + ")";
  }

  /**
   * What a failed TLS handshake means, from the exception types in its chain: which side did not
   * accept which certificate, or a URL scheme that does not match the port.
   */
  static String tlsProblem(Throwable tls) {
    for (Throwable t = tls; t != null; t = next(t)) {
      if (t instanceof SchemeMismatch.MismatchException
          || t instanceof ClientCertificateCheck.RefusedException) {
        return "TLS: " + t.getMessage();
      }
      if (t instanceof CertPathBuilderException || t instanceof CertPathValidatorException) {
        return "TLS: etcd's certificate is not signed by a CA this client trusts (check the CA certificate)";
      }
      if (t instanceof CertificateExpiredException || t instanceof CertificateNotYetValidException) {
        return "TLS: etcd's certificate has expired or is not valid yet";
      }
      if (t.getClass() == CertificateException.class) {
        // The JDK's hostname check throws the plain CertificateException.
        return "TLS: etcd's certificate does not name the host of the endpoint URL";
      }
    }
    if (tls instanceof SSLHandshakeException && tls.getCause() == null) {
      // JSSE reports an alert from the peer as a handshake failure without a cause: etcd ended
      // the handshake, which with a certificate it accepted it would not have done.
      return "TLS: etcd rejected the client certificate (none given, expired, or not signed by a CA"
          + " etcd trusts)";
    }
    return "TLS handshake failed";
  }

  /** The problem a kind names, in a few words. */
  private static String problem(Kind kind) {
    return switch (kind) {
      case NOT_REGISTERED -> "the lease is gone (expired or revoked)";
      case PERMISSION_DENIED -> "permission denied";
      case UNAUTHENTICATED -> "authentication failed";
      case TLS -> "TLS handshake failed";
      case LIMIT -> "over a size or quota limit";
      case COMPACTED -> "the revision was compacted";
      case REFUSED -> "invalid request";
      case CONFLICT, MALFORMED, UNAVAILABLE -> kind.name().toLowerCase(java.util.Locale.ROOT);
    };
  }

  /**
   * One line of detail: for a TLS failure the TLS exception, else the status code with the
   * first description found down the chain (etcd's own words), else the exception itself.
   */
  static String detail(Throwable c) {
    Throwable tls = tlsFailure(c);
    if (tls != null) {
      return EtcdFailureText.oneLine(tls.getClass().getSimpleName() + ": " + tls.getMessage());
    }
    return statusDetail(c);
  }

  /** The status code with the first description down the chain, else the exception itself. */
  private static String statusDetail(Throwable c) {
    Throwable carrier = firstWithCode(c);
    if (carrier == null) {
      return EtcdFailureText.oneLine(c.getClass().getSimpleName()
          + (c.getMessage() != null ? ": " + c.getMessage() : ""));
    }
    String description = null;
    for (Throwable t = carrier; t != null && description == null; t = next(t)) {
      description = descriptionOf(t);
    }
    Status.Code code = codeOf(carrier);
    return EtcdFailureText.oneLine(code + (description != null ? ": " + description : ""));
  }

  @Nullable
  private static String descriptionOf(@Nullable Throwable t) {
    String d;
    if (t instanceof StatusRuntimeException s) {
      d = s.getStatus().getDescription();
    } else if (t instanceof StatusException s) {
      d = s.getStatus().getDescription();
    } else if (t instanceof EtcdException) {
      d = t.getMessage();
    } else {
      return null;
    }
    return d == null || d.isBlank() ? null : d;
  }

  /** The TLS failure in {@code t}'s cause chain, or null. */
  @Nullable
  static Throwable tlsFailure(@Nullable Throwable t) {
    int depth = 0;
    for (Throwable c = t; c != null && depth++ < MAX_CHAIN; c = next(c)) {
      if (c instanceof SslHandshakeTimeoutException) {
        return null; // the peer was too slow or away: unreachable, not a TLS refusal
      }
      if (c instanceof SSLException
          || c instanceof NotSslRecordException
          || c instanceof CertificateException) {
        return c;
      }
    }
    return null;
  }

  /** The first throwable in the chain that carries a gRPC status code, or null. */
  @Nullable
  private static Throwable firstWithCode(@Nullable Throwable t) {
    int depth = 0;
    for (Throwable c = t; c != null && depth++ < MAX_CHAIN; c = next(c)) {
      if (codeOf(c) != null) {
        return c;
      }
    }
    return null;
  }

  @Nullable
  private static Status.Code codeOf(Throwable t) {
    if (t instanceof StatusRuntimeException s) {
      return s.getStatus().getCode();
    }
    if (t instanceof StatusException s) {
      return s.getStatus().getCode();
    }
    if (t instanceof EtcdException e) {
      // jetcd's ErrorCode mirrors gRPC's codes name for name (its numeric code is not public).
      return Status.Code.valueOf(e.getErrorCode().name());
    }
    return null;
  }

  @Nullable
  private static Throwable next(Throwable t) {
    Throwable c = t.getCause();
    return c == t ? null : c;
  }
}
