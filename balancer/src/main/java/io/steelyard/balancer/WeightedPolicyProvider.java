package io.steelyard.balancer;

import static java.util.Objects.requireNonNull;

import com.google.common.collect.ImmutableSet;
import io.grpc.LoadBalancer;
import io.grpc.LoadBalancerProvider;
import io.grpc.NameResolver.ConfigOrError;
import io.steelyard.balancer.internal.PolicyConfigParser;
import io.steelyard.balancer.internal.WeightedBalancers;
import io.steelyard.balancer.spi.PickerFactory;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.util.Map;
import java.util.Set;

/**
 * The base of every steelyard policy provider, and the way to write a policy of your own: a
 * weighted policy is a name, the config fields it reads, and a {@link PickerFactory}; this class
 * brings the rest, the same for every policy: one child per endpoint, weights read from {@code
 * io.steelyard.registry.EndpointWeights}, drained endpoints, slow start, the panic threshold,
 * the client subset, metadata selection ({@code subset} and {@code split}), client-side health checking
 * when grpc-services is present, and the parsing of the shared config fields ({@link
 * WeightedPolicyConfig}).
 *
 * <pre>{@code
 * public final class FirstReadyProvider extends WeightedPolicyProvider {
 *   public FirstReadyProvider() {
 *     super("first_ready", Set.of()); // the policy's name and its own config fields
 *   }
 *
 *   @Override
 *   protected PickerFactory newPickerFactory() {
 *     return (children, weights) -> children[0]; // pickers must be immutable and thread-safe
 *   }
 * }
 * }</pre>
 *
 * <p>List the subclass in {@code META-INF/services/io.grpc.LoadBalancerProvider}, as grpc's
 * {@code LoadBalancerRegistry} finds providers with {@link java.util.ServiceLoader}.
 *
 * <p>Config: {@link #parseLoadBalancingPolicyConfig} returns a {@link WeightedPolicyConfig}. A
 * field neither shared nor listed in the constructor's {@code policyFields} is ignored with one
 * logged warning per distinct config, so a config written for a newer version still applies to an
 * older client; a known field with a bad value is a {@link ConfigOrError} naming the policy and
 * the field. A policy with fields of its own ({@code balancer-orca}'s) lists them in {@code
 * policyFields}, overrides {@link #parseLoadBalancingPolicyConfig} to read them and calls {@link
 * #parseWeightedConfig} for the rest, and overrides {@link #newBalancer} to hand its balancer the
 * result.
 *
 * <p>Threading: a provider is shared by every channel of the process and is thread-safe; the
 * balancers it makes run in their channel's SynchronizationContext. A provider never throws.
 */
public abstract class WeightedPolicyProvider extends LoadBalancerProvider {

  /**
   * grpc-java's own providers use 5. Priority only matters between providers of the same name,
   * and ours collide with none.
   */
  private static final int PRIORITY = 5;

  private final String policyName;
  private final PolicyConfigParser parser;

  /**
   * A provider of the policy named {@code policyName} whose config may also carry {@code
   * policyFields} (beyond the fields every weighted policy reads).
   */
  protected WeightedPolicyProvider(String policyName, Set<String> policyFields) {
    this.policyName = requireNonNull(policyName, "policyName");
    this.parser = new PolicyConfigParser(policyName, ImmutableSet.copyOf(policyFields));
  }

  @Override
  public final boolean isAvailable() {
    return true;
  }

  @Override
  public final int getPriority() {
    return PRIORITY;
  }

  @Override
  public final String getPolicyName() {
    return policyName;
  }

  /**
   * The channel's balancer: {@link #newBalancer}'s, wrapped for client-side health checking
   * ({@code healthCheckConfig}) when grpc-services is on the class path.
   */
  @Override
  public final LoadBalancer newLoadBalancer(LoadBalancer.Helper helper) {
    return WeightedBalancers.withHealthChecking(
        new LoadBalancer.Factory() {
          @Override
          public LoadBalancer newLoadBalancer(LoadBalancer.Helper h) {
            return newBalancer(h);
          }
        },
        helper);
  }

  /**
   * The balancer without the health-checking wrapper: by default {@link #newWeightedBalancer}
   * over a fresh {@link #newPickerFactory()}. Override to wrap it, e.g. to route load reports to
   * the picker factory or to unwrap a config type of your own.
   */
  protected LoadBalancer newBalancer(LoadBalancer.Helper helper) {
    return newWeightedBalancer(helper, newPickerFactory());
  }

  /**
   * A fresh picker factory for one balancer, which keeps it for its lifetime (see {@link
   * PickerFactory} for what it may hold).
   */
  protected abstract PickerFactory newPickerFactory();

  /**
   * steelyard's weighted balancer, named after this policy, building its pickers with {@code
   * pickers}. It expects a {@link WeightedPolicyConfig} (or none) in {@code
   * ResolvedAddresses.getLoadBalancingPolicyConfig()}.
   */
  protected final LoadBalancer newWeightedBalancer(
      LoadBalancer.Helper helper, PickerFactory pickers) {
    return WeightedBalancers.newBalancer(helper, policyName, requireNonNull(pickers, "pickers"));
  }

  /** Parses the config with {@link #parseWeightedConfig}; override to read fields of your own. */
  @Override
  public ConfigOrError parseLoadBalancingPolicyConfig(Map<String, ?> rawConfig) {
    return parseWeightedConfig(rawConfig);
  }

  /**
   * Parses the fields every weighted policy reads and those of {@code weighted_least_request}
   * this policy lists, into a {@link WeightedPolicyConfig}; skips the other listed fields (the
   * subclass reads them) and ignores unlisted ones with one warning per distinct config. Never
   * throws.
   */
  protected final ConfigOrError parseWeightedConfig(Map<String, ?> rawConfig) {
    return parser.parse(rawConfig);
  }

  /**
   * A protobuf JSON duration ({@code "1.5s"}, as grpc-java's own configs write them) in nanos, or
   * -1 when {@code value} is not one: for a policy's own duration fields.
   */
  protected static long parseDurationNanos(Object value) {
    return PolicyConfigParser.parseDurationNanos(value);
  }
}
