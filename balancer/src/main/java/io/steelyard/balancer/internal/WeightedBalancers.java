package io.steelyard.balancer.internal;

import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer;
import io.steelyard.balancer.spi.LoadAwarePickerFactory;
import io.steelyard.balancer.spi.PickerFactory;
import io.steelyard.balancer.spi.TracerDecorator;

/**
 * The entry points the providers in {@code io.steelyard.balancer} (and the benchmarks) use: the
 * shared weighted balancer, the health-checking wrapper, and the built-in policies' picker
 * factories. A policy's name lives with its provider; nothing here knows it until it is passed in.
 *
 * <pre>{@code
 * LoadBalancer lb = WeightedBalancers.newBalancer(helper, "weighted_random",
 *     WeightedBalancers.weightedRandomPickers());
 * }</pre>
 */
public final class WeightedBalancers {

  private WeightedBalancers() {}

  /**
   * steelyard's balancer for the policy named {@code policyName}, building its pickers with
   * {@code pickers}, without the health-checking wrapper.
   */
  public static LoadBalancer newBalancer(
      LoadBalancer.Helper helper, String policyName, PickerFactory pickers) {
    return new WeightedLoadBalancer(helper, policyName, pickers);
  }

  /**
   * {@code factory}'s balancer wrapped for client-side health checking when grpc-services is on
   * the class path ({@link HealthChecking}).
   */
  public static LoadBalancer withHealthChecking(
      LoadBalancer.Factory factory, LoadBalancer.Helper helper) {
    return HealthChecking.wrap(factory, helper);
  }

  /**
   * The key the balancer gives the endpoint {@code eag} when it asks a {@link PickerFactory} for a
   * picker (equal for equal address lists, whatever the attributes), for callers that drive a
   * factory as the balancer does.
   */
  public static Object endpointKey(EquivalentAddressGroup eag) {
    return WeightedLoadBalancer.endpointKey(eag);
  }

  /** {@code weighted_random}'s pickers: Walker's alias table, one random draw per pick. */
  public static PickerFactory weightedRandomPickers() {
    return WeightedRandomPicker.newFactory();
  }

  /** {@code weighted_round_robin_static}'s pickers: a precomputed smooth schedule. */
  public static PickerFactory smoothRoundRobinPickers() {
    return SmoothRoundRobinPicker.newFactory();
  }

  /**
   * {@code weighted_least_request}'s pickers ({@link LeastRequestPicker}), with {@code decorator}
   * on every endpoint's tracer.
   */
  public static LoadAwarePickerFactory leastRequestPickers(TracerDecorator decorator) {
    return new LeastRequestPickerFactory(decorator);
  }
}
