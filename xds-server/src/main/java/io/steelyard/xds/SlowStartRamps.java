package io.steelyard.xds;

import io.steelyard.balancer.spi.SlowStartConfig;
import io.steelyard.registry.ServiceInstance;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.annotation.Nullable;

/**
 * When each instance of one service began to take calls, for the slow-start ramp: the moment the
 * control plane saw it join (an address absent from the view before) or be undrained (weight 0
 * before, above 0 now). Instances of the first view do not ramp: they were taking calls before
 * the control plane started, and a restart of the control plane must not send them back to the
 * start of a ramp. The factor is the balancer's curve, {@link SlowStartConfig#factor}.
 *
 * <p>Not thread-safe: the publisher's executor only.
 */
final class SlowStartRamps {

  /** The longest step between two pushes of a ramp. */
  static final Duration MAX_STEP = Duration.ofSeconds(1);

  private final Map<String, Instant> began = new HashMap<>();
  @Nullable private Map<String, Integer> lastWeights;

  /** Takes a new view of the instances, seen at {@code now}. */
  void update(List<ServiceInstance> instances, Instant now) {
    Map<String, Integer> weights = new HashMap<>();
    for (ServiceInstance i : instances) {
      weights.put(i.address(), i.weight());
    }
    if (lastWeights != null) {
      for (ServiceInstance i : instances) {
        Integer before = lastWeights.get(i.address());
        if (i.weight() > 0 && (before == null || before == 0)) {
          began.put(i.address(), now);
        }
      }
    }
    began.keySet().retainAll(weights.keySet());
    lastWeights = weights;
  }

  /** Each instance's factor at {@code now}: 1 without {@code slowStart} or outside a ramp. */
  double[] factors(List<ServiceInstance> instances, @Nullable SlowStartConfig slowStart, Instant now) {
    double[] out = new double[instances.size()];
    for (int i = 0; i < out.length; i++) {
      Instant start = began.get(instances.get(i).address());
      out[i] = slowStart == null || start == null
          ? 1.0
          : slowStart.factor(Duration.between(start, now).toNanos());
    }
    return out;
  }

  /** Whether some instance is still inside its ramp at {@code now}. */
  boolean ramping(@Nullable SlowStartConfig slowStart, Instant now) {
    if (slowStart == null) {
      return false;
    }
    for (Instant start : began.values()) {
      if (Duration.between(start, now).toNanos() < slowStart.windowNanos()) {
        return true;
      }
    }
    return false;
  }

  /** The step between two pushes of a ramp: a tenth of the window, at most {@link #MAX_STEP}. */
  static Duration step(SlowStartConfig slowStart) {
    Duration tenth = Duration.ofNanos(Math.max(1_000_000, slowStart.windowNanos() / 10));
    return tenth.compareTo(MAX_STEP) < 0 ? tenth : MAX_STEP;
  }
}
