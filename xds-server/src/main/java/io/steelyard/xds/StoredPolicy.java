package io.steelyard.xds;

import io.grpc.LoadBalancerProvider;
import io.grpc.LoadBalancerRegistry;
import io.grpc.NameResolver.ConfigOrError;
import io.steelyard.balancer.WeightedPolicyProvider;
import io.steelyard.balancer.spi.SlowStartConfig;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import io.steelyard.balancer.spi.ZoneRoutingConfig;
import io.steelyard.registry.ServiceConfigJson;
import java.util.List;
import java.util.Map;
import javax.annotation.Nullable;

/**
 * The zone-routing and slow-start settings of a service, from its stored service config: those
 * of the first steelyard weighted policy in its {@code loadBalancingConfig}, read by that
 * policy's own parser ({@link WeightedPolicyProvider#parseLoadBalancingPolicyConfig}), the one
 * that reads them for Java channels and for {@code steelyard config set}. No stored config, or
 * one without a steelyard weighted policy, gives the defaults: zone routing on, no slow start.
 *
 * @param zoneRouting the {@code zoneRouting} option
 * @param slowStart the {@code slowStart} option, or null for none
 */
record StoredPolicy(ZoneRoutingConfig zoneRouting, @Nullable SlowStartConfig slowStart) {

  /** Zone routing on with its defaults, no slow start. */
  static final StoredPolicy DEFAULT = new StoredPolicy(ZoneRoutingConfig.DEFAULT, null);

  /**
   * The settings in the stored config {@code json}; {@link #DEFAULT} for null (none stored).
   *
   * @throws IllegalArgumentException with the parser's reason, in one line, when the config or
   *     its steelyard policy's options are refused
   */
  static StoredPolicy parse(@Nullable String json) {
    if (json == null) {
      return DEFAULT;
    }
    Map<String, ?> config = ServiceConfigJson.parse(json);
    Object list = config.get("loadBalancingConfig");
    if (list == null) {
      return DEFAULT;
    }
    if (!(list instanceof List<?> entries)) {
      throw new IllegalArgumentException("loadBalancingConfig: not a list");
    }
    LoadBalancerRegistry registry = LoadBalancerRegistry.getDefaultRegistry();
    for (Object entry : entries) {
      if (!(entry instanceof Map<?, ?> one) || one.size() != 1) {
        throw new IllegalArgumentException("loadBalancingConfig: an entry is not an object of one policy");
      }
      Map.Entry<?, ?> policy = one.entrySet().iterator().next();
      LoadBalancerProvider provider = registry.getProvider(String.valueOf(policy.getKey()));
      if (!(provider instanceof WeightedPolicyProvider)) {
        continue;
      }
      Object options = policy.getValue() == null ? Map.of() : policy.getValue();
      if (!(options instanceof Map<?, ?> raw)) {
        throw new IllegalArgumentException(policy.getKey() + ": not an object");
      }
      @SuppressWarnings("unchecked")
      ConfigOrError parsed = provider.parseLoadBalancingPolicyConfig((Map<String, ?>) raw);
      if (parsed.getError() != null) {
        throw new IllegalArgumentException(ServiceConfigJson.refusal(parsed.getError()));
      }
      if (!(parsed.getConfig() instanceof WeightedPolicyConfig weighted)) {
        return DEFAULT;
      }
      return new StoredPolicy(weighted.zoneRouting(), weighted.slowStart());
    }
    return DEFAULT;
  }
}
