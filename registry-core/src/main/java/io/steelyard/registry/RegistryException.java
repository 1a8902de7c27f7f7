package io.steelyard.registry;

import static java.util.Objects.requireNonNull;

import javax.annotation.Nullable;

/**
 * An operation on the registry failed for a reason the caller can act on. The message is one
 * line that names the problem and the operation, fit for a CLI's stderr (for example {@code etcd
 * refused list greeter: permission denied} or {@code etcd did not answer within 5000ms (list
 * greeter)}); the cause, when there is one, carries jetcd's and gRPC's details.
 *
 * <p>{@link #kind()} says what went wrong. Failures of etcd calls are classified once, by gRPC
 * status code and exception type (never by message text), in steelyard's internal etcd-call
 * layer; see {@code docs/architecture.md}.
 *
 * <pre>{@code
 * try {
 *   store.apply(InstanceWrite.setWeight("greeter", "10.0.0.7:50051", 8));
 * } catch (RegistryException e) {
 *   if (e.kind().refused()) {
 *     log.error("fix the etcd credentials or role: {}", e.getMessage());
 *   }
 * }
 * }</pre>
 */
public final class RegistryException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Why the operation failed. */
  public enum Kind {
    /** The instance's key does not exist, or its lease is gone (etcd: lease not found). */
    NOT_REGISTERED(false),
    /** The key changed between read and write (mod revision guard); nothing was written. */
    CONFLICT(false),
    /** The stored value is not one we can read, so we refuse to rewrite it. */
    MALFORMED(false),
    /**
     * etcd could not be reached or did not answer in time (connection refused, no leader,
     * timeout): worth retrying once etcd is back.
     */
    UNAVAILABLE(false),
    /** etcd refused the operation: the user's role lacks the permission (PERMISSION_DENIED). */
    PERMISSION_DENIED(true),
    /** etcd refused the credentials: wrong user or password, or an expired token. */
    UNAUTHENTICATED(true),
    /**
     * The TLS handshake with etcd failed: an untrusted or expired certificate, a client
     * certificate etcd rejects, or TLS spoken to a plain-text endpoint (or the other way round).
     */
    TLS(true),
    /**
     * A size or quota limit: a response larger than the client accepts, etcd's database over
     * its quota (NOSPACE), too many requests (all gRPC RESOURCE_EXHAUSTED).
     */
    LIMIT(true),
    /** The revision asked for was compacted away: list again. */
    COMPACTED(false),
    /**
     * etcd answered the operation with another error (invalid argument, failed precondition,
     * unimplemented, ...); the message carries etcd's words.
     */
    REFUSED(true);

    private final boolean refused;

    Kind(boolean refused) {
      this.refused = refused;
    }

    /**
     * Whether etcd (or the TLS peer) answered and said no: retrying the same request with the
     * same settings fails again until an operator changes something. Never reported as "etcd
     * unreachable".
     */
    public boolean refused() {
      return refused;
    }
  }

  private final Kind kind;

  public RegistryException(Kind kind, String message, @Nullable Throwable cause) {
    super(message, cause);
    this.kind = requireNonNull(kind, "kind");
  }

  public Kind kind() {
    return kind;
  }
}
