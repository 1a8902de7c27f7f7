package io.steelyard.balancer;

import io.steelyard.balancer.internal.WeightedBalancers;
import io.steelyard.balancer.spi.LoadAwarePickerFactory;
import io.steelyard.balancer.spi.PickerFactory;
import io.steelyard.balancer.spi.TracerDecorator;
import io.steelyard.balancer.spi.WeightedPolicyConfig;

/**
 * The {@value #POLICY_NAME} load-balancing policy: the weight ({@code EndpointWeights}) is the
 * endpoint's <em>capacity</em>; each call draws {@code choiceCount} distinct READY endpoints at
 * random in proportion to weight and goes to the one least loaded relative to its capacity,
 *
 * <pre>  score = (calls outstanding + 1) × penalty / weight     (lowest wins)</pre>
 *
 * <p>where {@code penalty} is 1 for a healthy server and grows with its recent failure ratio (and,
 * with {@code balancer-orca}, with the utilization it reports). Where the weights are right this
 * spreads calls like {@code weighted_random}; where they are wrong or a server slows down, calls
 * pile up on it and the next ones go elsewhere.
 *
 * <p>Registered through {@code META-INF/services}. Select it for every {@code etcd:} channel of a
 * service with the service config stored in the registry ({@code steelyard config set}, see
 * docs/balancer.md), or on one channel, which then keeps its own choice over the registry's:
 *
 * <pre>{@code
 * ManagedChannelBuilder.forTarget("etcd:///greeter")
 *     .disableServiceConfigLookUp()
 *     .defaultLoadBalancingPolicy(WeightedLeastRequestLoadBalancerProvider.POLICY_NAME)
 * }</pre>
 *
 * <p>or a service config, every field optional:
 *
 * <pre>{@code
 * {"loadBalancingConfig": [{"weighted_least_request":
 *     {"choiceCount": 3, "errorPenalty": 2.25, "decay": "1s", "latency": false}}]}
 * }</pre>
 *
 * <p>Its own options ({@link WeightedPolicyConfig#LEAST_REQUEST_FIELDS}) come on top of those
 * every weighted policy shares: slow start, the panic threshold and the client subset. An
 * unknown field is ignored with a logged warning; a value out of range is a config error naming
 * the field. Picks are O(1)
 * in the number of endpoints, lock-free, and allocate nothing beyond the one tracer per call that
 * grpc's stream-tracer mechanism creates to count the call. See {@code docs/balancer.md} for the
 * formula's reasoning and the benchmarks behind the defaults.
 */
public final class WeightedLeastRequestLoadBalancerProvider extends WeightedPolicyProvider {

  /** The policy name in service configs and {@code defaultLoadBalancingPolicy}. */
  public static final String POLICY_NAME = "weighted_least_request";

  /** Called by {@link java.util.ServiceLoader} (grpc's {@code LoadBalancerRegistry}). */
  public WeightedLeastRequestLoadBalancerProvider() {
    super(POLICY_NAME, WeightedPolicyConfig.LEAST_REQUEST_FIELDS);
  }

  @Override
  protected PickerFactory newPickerFactory() {
    return newPickerFactory(TracerDecorator.NONE);
  }

  /**
   * A fresh {@value #POLICY_NAME} picker factory with {@code decorator} on every endpoint's
   * tracer: for a policy built on this one that feeds server-reported load into the score, as
   * {@code balancer-orca}'s does.
   */
  public static LoadAwarePickerFactory newPickerFactory(TracerDecorator decorator) {
    return WeightedBalancers.leastRequestPickers(decorator);
  }
}
