package io.steelyard.balancer.orca;

import io.grpc.LoadBalancer;
import io.grpc.NameResolver.ConfigOrError;
import io.steelyard.balancer.WeightedLeastRequestLoadBalancerProvider;
import io.steelyard.balancer.WeightedPolicyProvider;
import io.steelyard.balancer.spi.LoadAwarePickerFactory;
import java.util.Map;

/**
 * The {@value #POLICY_NAME} load-balancing policy: {@code weighted_least_request} (see {@link
 * WeightedLeastRequestLoadBalancerProvider}) whose score also counts the utilization {@code u}
 * each server reports through ORCA, multiplying it by {@code 1 / (1 - min(u, 0.95))}. The
 * utilization is the report's application utilization when set, else its CPU utilization (as
 * grpc-java's {@code weighted_round_robin}). Reports come from every call's trailers, and also out
 * of band when {@code enableOobLoadReport} is on.
 *
 * <p>Servers report with grpc-java's own classes, e.g. {@code
 * OrcaMetricReportingServerInterceptor.create(metricRecorder)} for per-call reports and {@code
 * OrcaServiceImpl.createService(executor, metricRecorder, 1, SECONDS)} for out-of-band ones.
 *
 * <pre>{@code
 * {"loadBalancingConfig": [{"weighted_least_request_orca":
 *     {"choiceCount": 3, "enableOobLoadReport": false, "oobReportingPeriod": "10s"}}]}
 * }</pre>
 *
 * <p>Every option of {@code weighted_least_request} (and those every weighted policy shares: slow
 * start, the panic threshold, the client subset) applies too; an unknown field is ignored with a logged
 * warning. Registered through {@code META-INF/services} when the {@code balancer-orca} jar (which
 * brings grpc-xds) is on the classpath. Built on {@link WeightedPolicyProvider}, as any policy
 * outside steelyard's {@code balancer} module would be.
 */
public final class WeightedLeastRequestOrcaLoadBalancerProvider extends WeightedPolicyProvider {

  /** The policy name in service configs and {@code defaultLoadBalancingPolicy}. */
  public static final String POLICY_NAME = "weighted_least_request_orca";

  /** Called by {@link java.util.ServiceLoader} (grpc's {@code LoadBalancerRegistry}). */
  public WeightedLeastRequestOrcaLoadBalancerProvider() {
    super(POLICY_NAME, OrcaConfig.FIELDS);
  }

  @Override
  protected LoadAwarePickerFactory newPickerFactory() {
    return WeightedLeastRequestLoadBalancerProvider.newPickerFactory(OrcaUtilization.PER_CALL);
  }

  @Override
  protected LoadBalancer newBalancer(LoadBalancer.Helper helper) {
    return new OrcaLeastRequestLoadBalancer(helper, newPickerFactory(), this::newWeightedBalancer);
  }

  @Override
  public ConfigOrError parseLoadBalancingPolicyConfig(Map<String, ?> rawConfig) {
    return OrcaConfig.parse(
        POLICY_NAME,
        rawConfig,
        this::parseWeightedConfig,
        WeightedPolicyProvider::parseDurationNanos);
  }
}
