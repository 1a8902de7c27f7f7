package io.steelyard.balancer.internal;

import static java.util.Objects.requireNonNull;

import java.util.Arrays;
import javax.annotation.concurrent.NotThreadSafe;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one place that decides, for each endpoint with a child, whether a picker may choose it and
 * with what weight: its <em>effective weight</em>, {@code 0} meaning "not eligible".
 *
 * <p>Today: an endpoint is eligible when its declared weight (from {@link
 * io.steelyard.registry.EndpointWeights}) is positive, and counts with that weight. Weight 0 is a
 * drain. When <em>every</em> endpoint is drained, all of them are eligible with weight 1
 * (availability over literalness), and one warning is logged when that state begins.
 *
 * <p>Readiness is not decided here: the balancer puts the READY eligible endpoints in the picker,
 * and derives the aggregate state from the eligible ones. Which endpoints get a child at all
 * (deterministic subsetting) is decided before this, when children are created.
 *
 * <p>The <b>panic threshold</b> ({@link #panic}) widens eligibility when too little is left: when
 * fewer than {@code panicThresholdPercent} of the endpoints are usable, the balancer picks among
 * every endpoint that still has a connection, whatever excluded it (drain, NOT_SERVING, outlier
 * ejection), as Envoy does. One warning is logged when panic begins and one line when it ends.
 *
 * <p>Slow start is applied to the result of {@link #compute} by {@link SlowStart}, which needs
 * the endpoints' keys, readiness and a clock that this class does not. Meters of effective weight
 * per backend read the result of {@link #compute}.
 *
 * <p>Threading: confined to the balancer's SynchronizationContext.
 */
@NotThreadSafe
final class EffectiveWeights {

  private static final Logger logger = LoggerFactory.getLogger(EffectiveWeights.class);

  private final String policyName;
  private boolean allDrained;
  private boolean panicking;
  private boolean panicBegan;

  EffectiveWeights(String policyName) {
    this.policyName = requireNonNull(policyName, "policyName");
  }

  /**
   * The effective weight of each endpoint, parallel to {@code declared} (each in {@code
   * 0..MAX_WEIGHT}); {@code 0} means the endpoint must not be picked.
   */
  int[] compute(int[] declared) {
    int[] effective = new int[declared.length];
    boolean anyPositive = false;
    for (int i = 0; i < declared.length; i++) {
      effective[i] = declared[i];
      anyPositive |= declared[i] > 0;
    }
    boolean nowAllDrained = !anyPositive && declared.length > 0;
    if (nowAllDrained && !allDrained) {
      // INFO, not WARN: every endpoint drained is what a service's last server looks like while
      // it shuts down, and calls still go through.
      logger.info(
          "{}: every endpoint ({}) is drained (weight 0), as while the last server shuts down;"
              + " calls go to them evenly until one has a positive weight",
          policyName,
          declared.length);
    }
    allDrained = nowAllDrained;
    if (nowAllDrained) {
      Arrays.fill(effective, 1);
    }
    return effective;
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
