package io.steelyard.agent;

import static java.util.Objects.requireNonNull;

import javax.annotation.Nullable;

/**
 * An operation on the registry failed for a reason the caller can act on. The message is one
 * line, fit for a CLI's stderr; the cause (if any) carries the details.
 */
public final class RegistryException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** Why the operation failed. */
  public enum Kind {
    /** The instance's key does not exist. */
    NOT_REGISTERED,
    /** The key changed between read and write (mod revision guard); nothing was written. */
    CONFLICT,
    /** The stored value is not one we can read, so we refuse to rewrite it. */
    MALFORMED,
    /** etcd did not answer within the timeout, or refused the request. */
    UNAVAILABLE
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
