package io.steelyard.spring.cloud;

import io.steelyard.balancer.spi.AliasTable;

import io.steelyard.registry.Validation;
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
 * <p>Eligibility is the balancer's rule (registry-core's weights, DESIGN.md section 3): weight 0
 * is drained and never picked while another instance has a positive weight; when every instance
 * is drained, all are picked with equal weights. During slow start the picker is good until
 * {@link #refreshAtNanos()}, then rebuilt with the ramps' new factors.
 *
 * <p>Threading: immutable, safe to share.
 */
final class InstancePicker {

  /** Weight multiplier while a ramp runs: a weight-1 instance ramps in 1 % steps (as the balancer). */
  static final int SCALE = 100;

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
   * A picker over {@code instances} with declared {@code weights}; {@code rampStartNanos[i]} is
   * when instance {@code i} began to ramp ({@link Long#MIN_VALUE}: not ramping), judged at {@code
   * nowNanos} against {@code ramp} (null: slow start off).
   */
  @SuppressWarnings("unchecked")
  static InstancePicker of(
      List<ServiceInstance> instances, int[] weights, long[] rampStartNanos,
      @Nullable SlowStartRamp ramp, long nowNanos) {
    int n = instances.size();
    int[] effective = new int[n];
    boolean anyPositive = false;
    int max = 0;
    for (int i = 0; i < n; i++) {
      effective[i] = weights[i];
      anyPositive |= weights[i] > 0;
      max = Math.max(max, weights[i]);
    }
    if (!anyPositive) {
      java.util.Arrays.fill(effective, 1);
      max = 1;
    }
    long refreshAt = NEVER;
    if (ramp != null && anyPositive) {
      boolean ramping = false;
      for (int i = 0; i < n; i++) {
        ramping |= effective[i] > 0 && rampStartNanos[i] != Long.MIN_VALUE
            && nowNanos - rampStartNanos[i] < ramp.windowNanos();
      }
      if (ramping) {
        int scale = Math.max(1, Math.min(SCALE, Validation.MAX_WEIGHT / max));
        for (int i = 0; i < n; i++) {
          if (effective[i] > 0 && rampStartNanos[i] != Long.MIN_VALUE) {
            double factor = ramp.factor(nowNanos - rampStartNanos[i]);
            effective[i] = (int) Math.max(1, Math.round((double) effective[i] * scale * factor));
          } else {
            effective[i] *= scale;
          }
        }
        refreshAt = nowNanos + ramp.refreshNanos();
      }
    }
    int eligible = 0;
    for (int w : effective) {
      if (w > 0) {
        eligible++;
      }
    }
    int[] tableWeights = new int[eligible];
    Mono<Response<ServiceInstance>>[] answers = new Mono[eligible];
    int j = 0;
    for (int i = 0; i < n; i++) {
      if (effective[i] > 0) {
        tableWeights[j] = effective[i];
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
