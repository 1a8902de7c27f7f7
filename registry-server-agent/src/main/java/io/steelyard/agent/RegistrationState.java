package io.steelyard.agent;

/**
 * Where a {@link ServiceRegistration} stands. Transitions:
 *
 * <pre>
 * NEW --start()--> REGISTERING --granted + put--> REGISTERED
 * REGISTERED --lease lost--> RECOVERING --granted + put--> REGISTERED
 * REGISTERED --key deleted, lease alive--> DELETED_BY_OPERATOR --reregister()--> REGISTERING
 * REGISTERING/RECOVERING --etcd refuses--> REFUSED --slow retry or reregister()--> REGISTERED
 * any --close()--> CLOSED
 * </pre>
 */
public enum RegistrationState {
  /** Built, {@code start()} not called yet. */
  NEW,
  /** Granting a lease and writing the key for the first time (or after {@code reregister()}). */
  REGISTERING,
  /** The key is in etcd under a live lease that is being kept alive. */
  REGISTERED,
  /**
   * The lease was lost (expired, revoked from outside, or etcd stopped answering for longer than
   * the TTL); a new lease is being granted and the key written again, with backoff, until it works
   * or the registration is closed.
   */
  RECOVERING,
  /**
   * Someone deleted the key while its lease was alive (an operator's {@code deregister}). The agent
   * respects that: it revoked its lease and writes nothing until {@code reregister()} is called.
   */
  DELETED_BY_OPERATOR,
  /**
   * etcd answered and refused the registration: the user's role may not write the key
   * (permission denied), the credentials are wrong (authentication failed), or the TLS handshake
   * failed. Not an outage, so it is not retried as one: the registration tries again only every
   * {@code retryMaxDelay} (default 5 s) in case an operator fixes the role or credentials, and at
   * once on {@code reregister()}; {@code ServiceRegistration.refusal()} holds etcd's reason, and
   * the future of {@code start()} fails with it if this happens before the first registration.
   */
  REFUSED,
  /** {@code close()} was called: the lease is revoked (or was given up on) and nothing runs any more. */
  CLOSED
}
