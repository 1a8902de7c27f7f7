package io.steelyard.balancer.internal;

import static java.util.Objects.requireNonNull;

import io.grpc.LoadBalancer;
import io.grpc.NameResolver.ConfigOrError;
import io.steelyard.balancer.WeightedRandomLoadBalancerProvider;
import io.steelyard.balancer.WeightedRoundRobinStaticLoadBalancerProvider;
import java.util.Map;
import java.util.function.Supplier;

/**
 * One weighted policy: its name, its config parser, and the picker factory that makes it
 * different from the others. Everything else (children, eligibility, effective weights, states,
 * health checking) is shared by all of them in {@link WeightedLoadBalancer}.
 *
 * <p>The public providers in {@code io.steelyard.balancer} delegate here. Benchmarks use the same
 * entry points a provider does: {@link #balancerFactory()} for the balancer without the
 * health-checking wrapper, and {@link #newPickerFactory()} to build pickers directly.
 *
 * <pre>{@code
 * LoadBalancer lb = WeightedPolicy.WEIGHTED_RANDOM.newLoadBalancer(helper); // as the provider
 * }</pre>
 */
public final class WeightedPolicy {

  /** {@code weighted_random}: Walker's alias table, one random draw per pick. */
  public static final WeightedPolicy WEIGHTED_RANDOM =
      new WeightedPolicy(
          WeightedRandomLoadBalancerProvider.POLICY_NAME, WeightedRandomPicker::newFactory);

  /** {@code weighted_round_robin_static}: a precomputed smooth schedule. */
  public static final WeightedPolicy WEIGHTED_ROUND_ROBIN_STATIC =
      new WeightedPolicy(
          WeightedRoundRobinStaticLoadBalancerProvider.POLICY_NAME,
          SmoothRoundRobinPicker::newFactory);

  private final String name;
  private final Supplier<PickerFactory> pickerFactories;
  private final LoadBalancer.Factory balancerFactory;

  private WeightedPolicy(String name, Supplier<PickerFactory> pickerFactories) {
    this.name = requireNonNull(name, "name");
    this.pickerFactories = requireNonNull(pickerFactories, "pickerFactories");
    this.balancerFactory =
        new LoadBalancer.Factory() {
          @Override
          public LoadBalancer newLoadBalancer(LoadBalancer.Helper helper) {
            return new WeightedLoadBalancer(helper, name, newPickerFactory());
          }
        };
  }

  /** The policy name in service configs and {@code defaultLoadBalancingPolicy}. */
  public String name() {
    return name;
  }

  /** Parses this policy's {@code loadBalancingConfig} entry; see {@link WeightedPolicyConfig}. */
  public ConfigOrError parseConfig(Map<String, ?> rawConfig) {
    return WeightedPolicyConfig.parse(name, rawConfig);
  }

  /**
   * The balancer a channel gets: {@link #balancerFactory()}'s, wrapped for client-side health
   * checking when grpc-services is on the classpath ({@link HealthChecking}).
   */
  public LoadBalancer newLoadBalancer(LoadBalancer.Helper helper) {
    return HealthChecking.wrap(balancerFactory, helper);
  }

  /** The balancer itself, without the health-checking wrapper. */
  public LoadBalancer.Factory balancerFactory() {
    return balancerFactory;
  }

  /** A fresh picker factory: each balancer of this policy gets its own. */
  public PickerFactory newPickerFactory() {
    return pickerFactories.get();
  }

  @Override
  public String toString() {
    return name;
  }
}
