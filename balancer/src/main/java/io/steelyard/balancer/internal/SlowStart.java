package io.steelyard.balancer.internal;

import static java.util.Objects.requireNonNull;

import com.google.common.base.Ticker;
import io.steelyard.balancer.spi.SlowStartConfig;
import io.steelyard.balancer.spi.SlowStartWeights;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import javax.annotation.Nullable;
import javax.annotation.concurrent.NotThreadSafe;

/**
 * Slow start: which endpoints ramp, since when, and their ramped weights. Applied by the balancer
 * to the result of {@link io.steelyard.balancer.spi.EffectiveWeights#compute}, so every weighted
 * policy ramps the same way.
 *
 * <p><b>When a ramp begins.</b> Every client must agree on when a server started without trusting
 * clocks (its own or the server's) and without restarting ramps when a client restarts. So the
 * start is an event this balancer sees, measured on its own {@link Ticker}:
 *
 * <ul>
 *   <li>endpoints in the balancer's first non-empty resolution (a discovery client's first etcd
 *       list) do not ramp when they first become READY: they were serving before this client
 *       started, and a client restart must not send them less;
 *   <li>an endpoint that appears in a later resolution (a new registration, delivered by the
 *       watch within milliseconds to every client) ramps from the moment it becomes usable;
 *   <li>an endpoint that becomes usable again after having been unusable ramps again: READY after
 *       TRANSIENT_FAILURE, IDLE or CONNECTING (a restarted server, NOT_SERVING then SERVING, a
 *       parent's outlier ejection ending) and an undrain (weight 0 to positive).
 * </ul>
 *
 * <p>"Usable" is READY with a positive effective weight. A ramp that loses usability ends; the
 * next usable period starts a new one.
 *
 * <p><b>Weights.</b> {@link SlowStartWeights#apply}, the function integrations that pick outside
 * gRPC call too: while any ramp runs every weight is multiplied by {@value
 * SlowStartWeights#SCALE} (less when that would exceed the registry's largest weight), and a
 * ramping endpoint's by {@link SlowStartConfig#factor} as well; when the last ramp ends the
 * weights return to their declared values (the same proportions, so the same schedule).
 *
 * <p>Threading: confined to the balancer's SynchronizationContext.
 */
@NotThreadSafe
final class SlowStart {

  private final Ticker ticker;

  /** Per child key: what this balancer knows of it. */
  private final Map<Object, Endpoint> endpoints = new HashMap<>();

  private boolean resolved;
  private boolean ramping;

  private static final class Endpoint {
    /** In the first resolution and never READY since: its first READY does not ramp. */
    boolean initial;

    boolean usable;
    boolean ramping;
    long rampStartNanos;
  }

  SlowStart(Ticker ticker) {
    this.ticker = requireNonNull(ticker, "ticker");
  }

  /** The child keys of a non-empty resolution; the first one's endpoints do not ramp. */
  void onResolution(Collection<Object> keys) {
    if (keys.isEmpty()) {
      return;
    }
    endpoints.keySet().retainAll(new HashSet<>(keys));
    for (Object key : keys) {
      endpoints.computeIfAbsent(
          key,
          k -> {
            Endpoint e = new Endpoint();
            e.initial = !resolved;
            return e;
          });
    }
    resolved = true;
  }

  /**
   * Applies the ramps to {@code effective} (parallel to {@code keys}, changed in place) and
   * returns the factor every non-ramping weight was multiplied by: 1 when nothing ramps (or
   * {@code config} is null, slow start off), else up to {@value SlowStartWeights#SCALE}. {@code
   * ready[i]} says whether endpoint {@code i} is READY; it is usable when also {@code effective[i]
   * > 0}.
   */
  int apply(@Nullable SlowStartConfig config, Object[] keys, boolean[] ready, int[] effective) {
    long now = ticker.read();
    ramping = false;
    long[] rampStarts = new long[keys.length];
    for (int i = 0; i < keys.length; i++) {
      Endpoint e = endpoints.computeIfAbsent(keys[i], k -> new Endpoint());
      boolean usable = ready[i] && effective[i] > 0;
      if (usable && !e.usable && !e.initial) {
        e.ramping = true;
        e.rampStartNanos = now;
      }
      if (!usable || config == null || now - e.rampStartNanos >= config.windowNanos()) {
        e.ramping = false;
      }
      if (ready[i]) {
        e.initial = false;
      }
      e.usable = usable;
      ramping |= e.ramping;
      rampStarts[i] = e.ramping ? e.rampStartNanos : SlowStartWeights.NOT_RAMPING;
    }
    return ramping ? SlowStartWeights.apply(config, effective, rampStarts, now) : 1;
  }

  /** Whether a ramp was running at the last {@link #apply}: the picker must be rebuilt later. */
  boolean ramping() {
    return ramping;
  }
}
