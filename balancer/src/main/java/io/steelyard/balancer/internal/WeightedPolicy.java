package io.steelyard.balancer.internal;

import static java.util.Objects.requireNonNull;

import io.grpc.LoadBalancer;
import io.grpc.NameResolver.ConfigOrError;
import com.google.common.collect.ImmutableSet;
import io.steelyard.balancer.WeightedLeastRequestLoadBalancerProvider;
import io.steelyard.balancer.WeightedRandomLoadBalancerProvider;
import io.steelyard.balancer.WeightedRoundRobinStaticLoadBalancerProvider;
import java.util.Map;
import java.util.Set;
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
          WeightedRandomLoadBalancerProvider.POLICY_NAME,
          ImmutableSet.of(),
          WeightedRandomPicker::newFactory);

  /** {@code weighted_round_robin_static}: a precomputed smooth schedule. */
  public static final WeightedPolicy WEIGHTED_ROUND_ROBIN_STATIC =
      new WeightedPolicy(
          WeightedRoundRobinStaticLoadBalancerProvider.POLICY_NAME,
          ImmutableSet.of(),
          SmoothRoundRobinPicker::newFactory);

  /**
   * {@code weighted_least_request}: candidates drawn by weight, the least loaded relative to its
   * capacity wins ({@link LeastRequestPicker}).
   */
  public static final WeightedPolicy WEIGHTED_LEAST_REQUEST =
      new WeightedPolicy(
          WeightedLeastRequestLoadBalancerProvider.POLICY_NAME,
          ImmutableSet.of(
              WeightedPolicyConfig.FIELD_CHOICE_COUNT,
              WeightedPolicyConfig.FIELD_LATENCY,
              WeightedPolicyConfig.FIELD_DECAY,
              WeightedPolicyConfig.FIELD_ERROR_PENALTY),
          LeastRequestPickerFactory::new);

  private final String name;
  private final Set<String> fields;
  private final Supplier<PickerFactory> pickerFactories;
  private final LoadBalancer.Factory balancerFactory;

  private WeightedPolicy(String name, Set<String> fields, Supplier<PickerFactory> pickerFactories) {
    this.name = requireNonNull(name, "name");
    this.fields = requireNonNull(fields, "fields");
    this.pickerFactories = requireNonNull(pickerFactories, "pickerFactories");
    this.balancerFactory =
        new LoadBalancer.Factory() {
          @Override
          public LoadBalancer newLoadBalancer(LoadBalancer.Helper helper) {
            return new WeightedLoadBalancer(helper, name, pickerFactories.get());
          }
        };
  }

  /** The policy name in service configs and {@code defaultLoadBalancingPolicy}. */
  public String name() {
    return name;
  }

  /** The config fields this policy accepts; any other is a config error. */
  public Set<String> fields() {
    return fields;
  }

  /** Parses this policy's {@code loadBalancingConfig} entry; see {@link WeightedPolicyConfig}. */
  public ConfigOrError parseConfig(Map<String, ?> rawConfig) {
    return parseConfig(name, rawConfig);
  }

  /**
   * Parses {@code rawConfig} against this policy's fields, naming {@code policyName} in errors:
   * for a policy that extends this one with fields of its own (the ORCA variant of {@code
   * weighted_least_request} in {@code balancer-orca}), after it took those out.
   */
  public ConfigOrError parseConfig(String policyName, Map<String, ?> rawConfig) {
    return WeightedPolicyConfig.parse(policyName, fields, rawConfig);
  }

  /**
   * The balancer a channel gets: {@link #balancerFactory()}'s, wrapped for client-side health
   * checking when grpc-services is on the classpath ({@link HealthChecking}).
   */
  public LoadBalancer newLoadBalancer(LoadBalancer.Helper helper) {
    return HealthChecking.wrap(balancerFactory, helper);
  }

  /**
   * A balancer named {@code policyName} with the given picker factory, without the
   * health-checking wrapper: for a variant that must hold its picker factory, as {@code
   * balancer-orca} does to route load reports to it.
   */
  public static LoadBalancer newBareLoadBalancer(
      LoadBalancer.Helper helper, String policyName, PickerFactory pickerFactory) {
    return new WeightedLoadBalancer(helper, policyName, pickerFactory);
  }

  /**
   * {@code factory}'s balancer wrapped for client-side health checking when grpc-services is on
   * the classpath ({@link HealthChecking}), as {@link #newLoadBalancer} does for ours.
   */
  public static LoadBalancer withHealthChecking(
      LoadBalancer.Factory factory, LoadBalancer.Helper helper) {
    return HealthChecking.wrap(factory, helper);
  }

  /** The balancer itself, without the health-checking wrapper. */
  public LoadBalancer.Factory balancerFactory() {
    return balancerFactory;
  }

  /** A fresh picker factory, as each balancer of this policy gets one. */
  public PickerFactory newPickerFactory() {
    return pickerFactories.get();
  }

  @Override
  public String toString() {
    return name;
  }
}
