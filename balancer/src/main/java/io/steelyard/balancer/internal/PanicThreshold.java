package io.steelyard.balancer.internal;

import static java.util.Objects.requireNonNull;

import javax.annotation.concurrent.NotThreadSafe;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The <b>panic threshold</b>: when too little is left, eligibility widens. When fewer than {@code
 * panicThresholdPercent} of the endpoints are usable, the balancer picks among every endpoint
 * that still has a connection, whatever excluded it (drain, NOT_SERVING, outlier ejection), as
 * Envoy does. One warning is logged when panic begins and one line when it ends.
 *
 * <p>Eligibility itself (drain, every endpoint drained) is {@link
 * io.steelyard.balancer.spi.EffectiveWeights}, decided before this.
 *
 * <p>Threading: confined to the balancer's SynchronizationContext.
 */
@NotThreadSafe
final class PanicThreshold {

  private static final Logger logger = LoggerFactory.getLogger(PanicThreshold.class);

  private final String policyName;
  private boolean panicking;
  private boolean panicBegan;

  PanicThreshold(String policyName) {
    this.policyName = requireNonNull(policyName, "policyName");
  }

  /**
   * Whether picks must ignore exclusions now: {@code usable} (READY and eligible) endpoints are
   * fewer than {@code thresholdPercent} of the {@code total} endpoints that are READY or
   * TRANSIENT_FAILURE (the balancer leaves out those still connecting). Never with threshold 0 or
   * no endpoints. Logs once when panic begins and once when it ends; returns true exactly while it
   * lasts, so the caller can count how often it began ({@link #panicBegan} after each call).
   */
  boolean panic(int usable, int total, int thresholdPercent) {
    boolean now = total > 0 && (long) usable * 100 < (long) thresholdPercent * total;
    panicBegan = now && !panicking;
    if (panicBegan) {
      logger.warn(
          "{}: panic: only {} of {} READY or failing endpoints are usable, below the panic"
              + " threshold of {}%;"
              + " picking among every connected endpoint, excluded ones included",
          policyName,
          usable,
          total,
          thresholdPercent);
    } else if (!now && panicking) {
      logger.info(
          "{}: panic over: {} of {} READY or failing endpoints are usable (panic threshold {}%)",
          policyName,
          usable,
          total,
          thresholdPercent);
    }
    panicking = now;
    return now;
  }

  /** Whether the last {@link #panic} call began a panic (false while one continues). */
  boolean panicBegan() {
    return panicBegan;
  }
}
