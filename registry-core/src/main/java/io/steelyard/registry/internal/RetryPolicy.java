package io.steelyard.registry.internal;

import static com.google.common.base.Preconditions.checkArgument;
import static java.util.Objects.requireNonNull;

import io.steelyard.registry.RegistryException;
import io.steelyard.registry.RegistryException.Kind;

/**
 * The retry decision of a loop that talks to etcd (a registration's attempts, its weight writes, a
 * discovery watcher's list and watch): what a failure is, how long to wait before the next
 * attempt, and whether to renew the etcd client first. Written once, here, so that every loop
 * waits, renews and gives up the same way; as grpc-java's {@code BackoffPolicy}, one instance
 * serves one loop and counts its failures in a row.
 *
 * <p>The rule, per failure ({@link #failed}):
 *
 * <table>
 *   <caption>Decision per failure</caption>
 *   <tr><th>{@link Failure}</th><th>delay</th><th>renew the client</th></tr>
 *   <tr><td>{@link Failure#UNAVAILABLE}, {@link Failure#TIMEOUT}</td>
 *       <td>the backoff's step for this failure in a row (capped, jittered)</td>
 *       <td>from the {@code renewAfterFailures}-th failure in a row: a fresh client skips the
 *       gRPC channel's own reconnect backoff, which grows towards two minutes</td></tr>
 *   <tr><td>{@link Failure#REFUSED}</td><td>the longest delay (the cap, jittered): neither a quick
 *       retry nor a new client fixes a refusal, an operator must act</td>
 *       <td>only for a TLS refusal: every handshake uses the certificate files as they are then
 *       ({@link TlsFiles}), and a new client dials at once instead of after the old channel's
 *       reconnect backoff, so rotated files are tried without delay</td></tr>
 *   <tr><td>{@link Failure#COMPACTED}, {@link Failure#LEASE_GONE}, {@link Failure#CONFLICT}</td>
 *       <td>the backoff's step, as for an outage</td><td>as for an outage</td></tr>
 * </table>
 *
 * <p>The failure is classified by {@link EtcdErrors} (by gRPC status code and exception type,
 * never by message text). Time and chance come from the {@link Backoff}'s injected {@link
 * java.util.Random}; the policy reads no clock (the renewal's rate limit is the client's, see
 * {@link RenewableClient}).
 *
 * <p>Threading: not thread-safe; confine an instance to its loop's serial executor.
 */
public final class RetryPolicy {

  /** What a failed etcd call means for the next attempt. */
  public enum Failure {
    /** etcd could not be reached: connection refused, no leader, a closed client, no status. */
    UNAVAILABLE,
    /**
     * etcd did not answer in time (the call's deadline, or DEADLINE_EXCEEDED); like {@link
     * #UNAVAILABLE}, except that the call may still take effect when etcd gets to it.
     */
    TIMEOUT,
    /**
     * etcd (or the TLS peer) answered no: authentication, permission, TLS, a size or quota limit,
     * an invalid request. The same request fails again until an operator changes something.
     */
    REFUSED,
    /** The revision asked for was compacted: only a fresh listing is trustworthy. */
    COMPACTED,
    /** etcd no longer has the lease (NOT_FOUND): it expired or was revoked. */
    LEASE_GONE,
    /** A guarded write found the key changed, or a value it cannot read: someone else wrote. */
    CONFLICT;

    /** Whether etcd did not answer at all ({@link #UNAVAILABLE} or {@link #TIMEOUT}). */
    public boolean unreachable() {
      return this == UNAVAILABLE || this == TIMEOUT;
    }
  }

  /**
   * The decision on one failure.
   *
   * @param error the failure as a {@link RegistryException}, with a one-line message naming the
   *     operation
   * @param failure what it is
   * @param failures how many failures in a row this loop has seen, this one included
   * @param delayNanos how long to wait before the next attempt
   * @param renewClient whether to replace the etcd client before the next attempt
   */
  public record Decision(
      RegistryException error, Failure failure, int failures, long delayNanos, boolean renewClient) {

    /** Whether etcd answered no ({@link Failure#REFUSED}). */
    public boolean refused() {
      return failure == Failure.REFUSED;
    }
  }

  /** The largest step the backoff is asked for; it is at its cap long before (see Backoff). */
  private static final int MAX_STEP = 62;

  private final Backoff backoff;
  private final int renewAfterFailures;
  private int failures;

  /**
   * A policy waiting {@code backoff}'s delays and renewing the client from the {@code
   * renewAfterFailures}-th failure in a row.
   */
  public RetryPolicy(Backoff backoff, int renewAfterFailures) {
    this.backoff = requireNonNull(backoff, "backoff");
    checkArgument(
        renewAfterFailures >= 1, "renewAfterFailures: %s (expected: >= 1)", renewAfterFailures);
    this.renewAfterFailures = renewAfterFailures;
  }

  /** What {@code t} is, by code: see {@link EtcdErrors#classify}. */
  public static Failure classify(Throwable t) {
    Kind kind = EtcdErrors.classify(t);
    return switch (kind) {
      case UNAVAILABLE -> EtcdErrors.isTimeout(t) ? Failure.TIMEOUT : Failure.UNAVAILABLE;
      case PERMISSION_DENIED, UNAUTHENTICATED, TLS, LIMIT, REFUSED -> Failure.REFUSED;
      case COMPACTED -> Failure.COMPACTED;
      case NOT_REGISTERED -> Failure.LEASE_GONE;
      case CONFLICT, MALFORMED -> Failure.CONFLICT;
    };
  }

  /**
   * The call {@code what} (e.g. {@code "list greeter"}) failed with {@code t}: counts it and
   * decides (see the class comment).
   */
  public Decision failed(String what, Throwable t) {
    RegistryException error = EtcdErrors.toRegistryException(what, t);
    Failure failure = classify(error); // its cause chain is t's
    failures = failures == Integer.MAX_VALUE ? failures : failures + 1;
    boolean refused = failure == Failure.REFUSED;
    long delayNanos = refused ? backoff.cappedDelayNanos() : step();
    boolean renewable = !refused || error.kind() == Kind.TLS;
    return new Decision(error, failure, failures, delayNanos, renewable && failures >= renewAfterFailures);
  }

  /**
   * The delay before retrying work whose failure the caller judged already (a check that etcd
   * could not answer yet): counts one more failure in a row and waits the backoff's step for it.
   */
  public long nextDelayNanos() {
    failures = failures == Integer.MAX_VALUE ? failures : failures + 1;
    return step();
  }

  /** An attempt succeeded (or the loop starts over): the next failure is the first in a row. */
  public void reset() {
    failures = 0;
  }

  /** Failures in a row since the last {@link #reset}. */
  public int failures() {
    return failures;
  }

  private long step() {
    return backoff.delayNanos(Math.min(failures - 1, MAX_STEP));
  }
}
