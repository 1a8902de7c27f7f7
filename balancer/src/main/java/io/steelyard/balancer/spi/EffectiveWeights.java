package io.steelyard.balancer.spi;

import static java.util.Objects.requireNonNull;

import java.util.Arrays;
import javax.annotation.concurrent.NotThreadSafe;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The eligibility rule of every steelyard balancer: which endpoints a picker may choose and with
 * what weight, their <em>effective weight</em>, {@code 0} meaning "not eligible". The weighted
 * gRPC policies apply it, and so do the integrations that pick outside gRPC (steelyard's Spring
 * Cloud LoadBalancer), so a drain means the same everywhere.
 *
 * <p><b>What.</b> An endpoint whose declared weight is positive counts with that weight. Weight
 * 0 is a drain: the endpoint is not eligible while another one has a positive weight. When
 * <em>every</em> endpoint is drained, all of them are eligible with weight 1 (availability over
 * literalness: it is also what a service's last server looks like while it shuts down). {@link
 * #compute} also logs one INFO line when that state begins, not on each call; {@link #of} is the
 * same rule without the log.
 *
 * <p><b>Threading.</b> {@link #of} and {@link #allDrained} are pure and thread-safe. An instance
 * remembers whether every endpoint was drained at its last {@link #compute}, to log once: give it
 * one caller at a time (a balancer's SynchronizationContext, a discovery thread).
 *
 * <pre>{@code
 * EffectiveWeights eligibility = new EffectiveWeights("greeter");
 * eligibility.compute(new int[] {0, 5, 2});   // {0, 5, 2}: the drained one is left out
 * eligibility.compute(new int[] {0, 0});      // {1, 1}, and one INFO line
 * EffectiveWeights.of(new int[] {0, 0});      // {1, 1}, no log
 * }</pre>
 */
@NotThreadSafe
public final class EffectiveWeights {

  private static final Logger logger = LoggerFactory.getLogger(EffectiveWeights.class);

  private final String name;
  private boolean allDrained;

  /** An instance whose log line starts with {@code name} (a policy's or a service's name). */
  public EffectiveWeights(String name) {
    this.name = requireNonNull(name, "name");
  }

  /**
   * The effective weight of each endpoint, parallel to {@code declared} (each {@code >= 0}); as
   * {@link #of}, and logs once when every endpoint becomes drained.
   */
  public int[] compute(int[] declared) {
    boolean nowAllDrained = allDrained(declared);
    if (nowAllDrained && !allDrained) {
      // INFO, not WARN: every endpoint drained is what a service's last server looks like while
      // it shuts down, and calls still go through.
      logger.info(
          "{}: every endpoint ({}) is drained (weight 0), as while the last server shuts down;"
              + " calls go to them evenly until one has a positive weight",
          name,
          declared.length);
    }
    allDrained = nowAllDrained;
    return of(declared);
  }

  /**
   * The effective weight of each endpoint, parallel to {@code declared} (each {@code >= 0}): the
   * declared weight, or 1 for every endpoint when all are drained. A new array.
   */
  public static int[] of(int[] declared) {
    int[] effective = declared.clone();
    if (allDrained(declared)) {
      Arrays.fill(effective, 1);
    }
    return effective;
  }

  /** Whether there is at least one endpoint and every one has weight 0. */
  public static boolean allDrained(int[] declared) {
    for (int w : declared) {
      if (w > 0) {
        return false;
      }
    }
    return declared.length > 0;
  }
}
