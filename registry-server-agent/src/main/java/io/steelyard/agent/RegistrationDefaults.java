package io.steelyard.agent;

import io.steelyard.registry.internal.Backoff;
import io.steelyard.registry.internal.RetryPolicy;
import java.time.Duration;
import java.util.Random;

/**
 * The registration's defaults and fixed tunings, in one place below every class that uses them:
 * the builders, the lease share and the state machine read them here, and {@link
 * ServiceRegistration} publishes the ones a user may set, with their units.
 */
final class RegistrationDefaults {

  /** Lease TTL, in seconds. */
  static final long TTL_SECONDS = 10;
  /** Smallest accepted lease TTL, in seconds: etcd's keepalive needs a few ticks within it. */
  static final long MIN_TTL_SECONDS = 2;
  /** Bound on each etcd call, in milliseconds. */
  static final long OPERATION_TIMEOUT_MILLIS = 5_000;
  /** Bound on a registration's close, in milliseconds. */
  static final long CLOSE_TIMEOUT_MILLIS = 5_000;
  /** Delay before the first retry of a failed registration, in milliseconds. */
  static final long RETRY_INITIAL_DELAY_MILLIS = 200;
  /** Cap on the delay between retries, in milliseconds; a refusal waits this long. */
  static final long RETRY_MAX_DELAY_MILLIS = 5_000;
  /** Each retry delay is scaled by a random factor in {@code [1 - jitter, 1 + jitter]}. */
  static final double RETRY_JITTER = 0.2;
  /**
   * Failures in a row (of a registration attempt, or of a weight write) after which an owned
   * client is replaced; see {@link io.steelyard.registry.internal.RenewableClient}.
   */
  static final int RENEW_CLIENT_AFTER_FAILURES = 2;
  /**
   * Minimum time between two replacements of an owned client. Short, unlike discovery's: the key
   * must be back within about a TTL of etcd's return, and a client younger than this has a gRPC
   * reconnect backoff of at most a few seconds.
   */
  static final Duration RENEW_CLIENT_MIN_INTERVAL = Duration.ofSeconds(2);

  private RegistrationDefaults() {}

  /** The registration's backoff from {@code initial} to {@code max}, with its jitter. */
  static Backoff backoff(Duration initial, Duration max, Random random) {
    return new Backoff(initial, max, RETRY_JITTER, random);
  }

  /** The backoff of work that has no user setting (a left-behind key's delete): the defaults. */
  static Backoff defaultBackoff(Random random) {
    return backoff(
        Duration.ofMillis(RETRY_INITIAL_DELAY_MILLIS), Duration.ofMillis(RETRY_MAX_DELAY_MILLIS), random);
  }

  /** A retry loop over {@code backoff} renewing the client after {@link #RENEW_CLIENT_AFTER_FAILURES}. */
  static RetryPolicy retryPolicy(Backoff backoff) {
    return new RetryPolicy(backoff, RENEW_CLIENT_AFTER_FAILURES);
  }
}
