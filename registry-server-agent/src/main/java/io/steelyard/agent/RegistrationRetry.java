package io.steelyard.agent;

import io.steelyard.registry.RegistryException;
import io.steelyard.registry.internal.Backoff;
import io.steelyard.registry.internal.EtcdErrors;
import io.steelyard.registry.internal.RetryPolicy;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * When a registration tries again, and what it says about a failure. Two loops, each on the one
 * {@link RetryPolicy}:
 *
 * <ul>
 *   <li><b>Attempts</b> (grant the lease, put the key): a failure is classified and the delay
 *       chosen by the policy; after a refusal (permission, credentials, TLS, a limit) the
 *       registration waits the longest delay, and its reason is kept for {@link
 *       ServiceRegistration#refusal()}. An outage is logged with its stack trace on the first and
 *       every tenth attempt, one line otherwise; a refusal once per distinct reason.
 *   <li><b>Checks</b> of a registered key that etcd could not answer yet (is the lease alive after
 *       the key went? the re-assertion after a restore): the policy's backoff, counted apart,
 *       from the first check after etcd last answered about the key.
 * </ul>
 *
 * <p>Threading: confined to the registration's serial executor, except {@link #refusal()}.
 */
final class RegistrationRetry {

  private static final Logger logger = LoggerFactory.getLogger(RegistrationRetry.class);

  private final String who;
  private final String key;
  private final RetryPolicy attempts;
  private final RetryPolicy checks;
  /** Why etcd refused the last refused attempt; null once registered. */
  @Nullable private volatile RegistryException refusal;

  RegistrationRetry(String who, String key, Backoff backoff) {
    this.who = who;
    this.key = key;
    this.attempts = RegistrationDefaults.retryPolicy(backoff);
    this.checks = RegistrationDefaults.retryPolicy(backoff);
  }

  /** Why etcd refused the last attempt, if it did. Any thread. */
  @Nullable
  RegistryException refusal() {
    return refusal;
  }

  /** A registration attempt failed with {@code t}: the decision, logged. */
  RetryPolicy.Decision attemptFailed(Throwable t) {
    RetryPolicy.Decision d = attempts.failed("register " + key, t);
    if (d.refused()) {
      refused(d.error(), d.delayNanos());
      return d;
    }
    int attempt = d.failures();
    long delayMillis = TimeUnit.NANOSECONDS.toMillis(d.delayNanos());
    Throwable cause = EtcdErrors.unwrap(t);
    if (attempt == 1 || attempt % 10 == 0) {
      logger.warn(
          "Could not register {} (attempt {}); retrying in {} ms", who, attempt, delayMillis, cause);
    } else {
      logger.warn(
          "Could not register {} (attempt {}); retrying in {} ms: {}",
          who, attempt, delayMillis, cause.getMessage());
    }
    return d;
  }

  /**
   * One line per distinct reason (no stack trace: the message names the problem); a refusal
   * repeated is logged at DEBUG.
   */
  private void refused(RegistryException failure, long retryNanos) {
    RegistryException previous = refusal;
    refusal = failure;
    if (previous == null || !previous.getMessage().equals(failure.getMessage())) {
      logger.warn(
          "etcd refused to register {}: {}; trying again every {} ms in case the role or"
              + " credentials are fixed",
          who, failure.getMessage(), TimeUnit.NANOSECONDS.toMillis(retryNanos));
    } else {
      logger.debug("etcd still refuses to register {}: {}", who, failure.getMessage());
    }
  }

  /** The registration starts over (asked again, or after a lost lease): attempts count from 0. */
  void startOver() {
    attempts.reset();
  }

  /** The key is registered: both loops start afresh, and no refusal stands. */
  void registered() {
    attempts.reset();
    checks.reset();
    refusal = null;
  }

  /** The delay before a check of the key that etcd could not answer is made again. */
  long checkDelayNanos() {
    return checks.nextDelayNanos();
  }

  /** etcd answered about the key: the next check that fails waits the shortest delay. */
  void keyAnswered() {
    checks.reset();
  }
}
