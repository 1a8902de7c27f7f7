package io.steelyard.agent;

import static com.google.common.base.Preconditions.checkArgument;

import io.steelyard.registry.Validation;

/**
 * Where a registration's weight comes from over time: a signal of the server's capacity (CPU
 * count, CPU headroom, queue depth) that the registration samples and publishes to etcd through
 * its lease-keeping, revision-guarded update, with hysteresis and a rate limit so that a fleet of
 * agents cannot storm etcd (see {@link ServiceRegistrationBuilder#weightSource}).
 *
 * <pre>{@code
 * ServiceRegistration.builder(etcd, "greeter", "10.0.0.7:50051")
 *     .weightSource(WeightSource.availableProcessors(10))         // 4 cores: weight 40
 *     .build();
 * ServiceRegistration.builder(etcd, "greeter", "10.0.0.7:50051")
 *     .weightSource(() -> 100 - executor.queuePercentFull())       // a live signal
 *     .weightHysteresis(0.2, 5)                                    // ignore changes under 20 % or 5
 *     .weightSampling(Duration.ofSeconds(2), Duration.ofSeconds(30))
 *     .build();
 * }</pre>
 *
 * <p><b>Contract.</b> {@link #weight()} is called on the registration's thread (the one every
 * registration of the JVM shares), once per sample interval: it must return quickly and never
 * block. A value outside {@code 0..1000000} or an exception skips that sample (logged). 0 drains
 * the server, as an operator's {@code drain} does.
 */
@FunctionalInterface
public interface WeightSource {

  /** Default time between two samples, in milliseconds: {@value}. */
  long DEFAULT_SAMPLE_INTERVAL_MILLIS = 5_000;
  /** Default least time between two weight writes of one registration, in milliseconds: {@value}. */
  long DEFAULT_MIN_WRITE_INTERVAL_MILLIS = 30_000;
  /** Default least relative change that is published (a fraction of the current weight): {@value}. */
  double DEFAULT_MIN_RELATIVE_CHANGE = 0.1;
  /** Default least absolute change that is published: {@value}. */
  int DEFAULT_MIN_ABSOLUTE_CHANGE = 1;

  /** The weight the server should have now, {@code 0..1000000}. */
  int weight();

  /** Always {@code weight}. */
  static WeightSource fixed(int weight) {
    Validation.checkWeight(weight);
    return () -> weight;
  }

  /**
   * {@code Runtime.availableProcessors() × perProcessor}, rounded, at least 1 and at most the
   * largest weight: a sane default capacity for servers of different sizes in one fleet (a JVM in
   * a container sees its CPU quota here, and a changed quota is picked up at the next sample).
   *
   * @throws IllegalArgumentException if {@code perProcessor} is not positive
   */
  static WeightSource availableProcessors(double perProcessor) {
    checkArgument(
        perProcessor > 0 && Double.isFinite(perProcessor),
        "perProcessor: %s (expected: > 0)", perProcessor);
    return () -> {
      long w = Math.round(Runtime.getRuntime().availableProcessors() * perProcessor);
      return (int) Math.max(1, Math.min(Validation.MAX_WEIGHT, w));
    };
  }
}
