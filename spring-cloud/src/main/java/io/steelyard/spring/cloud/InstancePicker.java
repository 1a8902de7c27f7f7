package io.steelyard.spring.cloud;

import io.steelyard.balancer.spi.AliasTable;
import io.steelyard.balancer.spi.EffectiveWeights;
import io.steelyard.balancer.spi.SlowStartConfig;
import io.steelyard.balancer.spi.SlowStartWeights;
import java.util.List;
import javax.annotation.Nullable;
import org.springframework.cloud.client.ServiceInstance;
import org.springframework.cloud.client.loadbalancer.DefaultResponse;
import org.springframework.cloud.client.loadbalancer.EmptyResponse;
import org.springframework.cloud.client.loadbalancer.Response;
import reactor.core.publisher.Mono;

/**
 * An immutable weighted picker over one list of instances: an alias table over the eligible
 * instances and, per instance, the finished answer ({@code Mono<Response>}) a load balancer
 * returns, built once. A pick is one random {@code long}, two array reads and no allocation.
 *
 * <p>The weights are the balancer's: the caller applies its eligibility rule ({@link
 * EffectiveWeights}: weight 0 is drained, and when every instance is drained all count 1), and
 * this picker its slow-start weight function ({@link SlowStartWeights}). During slow start the
 * picker is good until {@link #refreshAtNanos()}, then rebuilt with the ramps' new factors.
 *
 * <p>Threading: immutable, safe to share.
 */
final class InstancePicker {

  /** No ramp: picks stay good until the list changes. */
  static final long NEVER = Long.MAX_VALUE;

  static final Mono<Response<ServiceInstance>> EMPTY = Mono.just(new EmptyResponse());

  private final List<ServiceInstance> instances;
  private final long[] table;
  private final Mono<Response<ServiceInstance>>[] answers;
  private final long refreshAtNanos;

  private InstancePicker(
      List<ServiceInstance> instances, long[] table, Mono<Response<ServiceInstance>>[] answers,
      long refreshAtNanos) {
    this.instances = instances;
    this.table = table;
    this.answers = answers;
    this.refreshAtNanos = refreshAtNanos;
  }

  static InstancePicker empty() {
    return of(List.of(), new int[0], new long[0], null, 0);
  }

  /**
   * A picker over {@code instances} with their {@code effective} weights ({@link
   * EffectiveWeights}); {@code rampStartNanos[i]} is when instance {@code i} began to ramp
   * ({@link SlowStartWeights#NOT_RAMPING}: not ramping), judged at {@code nowNanos} against
   * {@code slowStart} (null: slow start off).
   */
  @SuppressWarnings("unchecked")
  static InstancePicker of(
      List<ServiceInstance> instances, int[] effective, long[] rampStartNanos,
      @Nullable SlowStartConfig slowStart, long nowNanos) {
    int n = instances.size();
    int[] weights = effective.clone();
    long refreshAt = NEVER;
    if (slowStart != null && SlowStartWeights.ramping(slowStart, weights, rampStartNanos, nowNanos)) {
      SlowStartWeights.apply(slowStart, weights, rampStartNanos, nowNanos);
      refreshAt = nowNanos + SlowStartWeights.refreshDelayNanos(slowStart);
    }
    int eligible = 0;
    for (int w : weights) {
      if (w > 0) {
        eligible++;
      }
    }
    int[] tableWeights = new int[eligible];
    Mono<Response<ServiceInstance>>[] answers = new Mono[eligible];
    int j = 0;
    for (int i = 0; i < n; i++) {
      if (weights[i] > 0) {
        tableWeights[j] = weights[i];
        answers[j] = Mono.just(new DefaultResponse(instances.get(i)));
        j++;
      }
    }
    return new InstancePicker(instances, AliasTable.of(tableWeights), answers, refreshAt);
  }

  /** The answer for the 64 random bits {@code random}; {@link #EMPTY} when there is no instance. */
  Mono<Response<ServiceInstance>> pick(long random) {
    return table.length == 0 ? EMPTY : answers[AliasTable.sample(table, random)];
  }

  /** All instances of the list, drained ones included, in address order. */
  List<ServiceInstance> instances() {
    return instances;
  }

  /** When the picker must be rebuilt because ramps moved on; {@link #NEVER} without ramps. */
  long refreshAtNanos() {
    return refreshAtNanos;
  }
}
