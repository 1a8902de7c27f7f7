package io.steelyard.balancer.orca;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.LoadBalancerRegistry;
import io.grpc.NameResolver.ConfigOrError;
import io.grpc.services.InternalCallMetricRecorder;
import io.grpc.services.MetricReport;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class OrcaConfigTest {

  private final WeightedLeastRequestOrcaLoadBalancerProvider provider =
      new WeightedLeastRequestOrcaLoadBalancerProvider();

  @Test
  void providerIsRegisteredUnderItsName() {
    assertThat(LoadBalancerRegistry.getDefaultRegistry().getProvider("weighted_least_request_orca"))
        .isInstanceOf(WeightedLeastRequestOrcaLoadBalancerProvider.class);
  }

  @Test
  void emptyConfigIsTheDefault() {
    assertThat(provider.parseLoadBalancingPolicyConfig(Map.of()).getConfig())
        .isEqualTo(OrcaConfig.DEFAULT);
  }

  @Test
  void ownAndBaseFieldsAreParsed() {
    ConfigOrError parsed =
        provider.parseLoadBalancingPolicyConfig(
            Map.of(
                "enableOobLoadReport", true,
                "oobReportingPeriod", "2.5s",
                "choiceCount", 4.0,
                "decay", "0.5s"));

    OrcaConfig config = (OrcaConfig) parsed.getConfig();
    assertThat(config.enableOob).isTrue();
    assertThat(config.oobPeriodNanos).isEqualTo(TimeUnit.MILLISECONDS.toNanos(2500));
    assertThat(config.base.choiceCount()).isEqualTo(4);
    assertThat(config.base.decayNanos()).isEqualTo(TimeUnit.MILLISECONDS.toNanos(500));
  }

  @Test
  void badValuesNameThePolicyAndTheField() {
    assertThat(error(Map.of("enableOobLoadReport", "yes")))
        .isEqualTo("weighted_least_request_orca.enableOobLoadReport: yes (expected: true or false)");
    assertThat(error(Map.of("oobReportingPeriod", "10")))
        .startsWith("weighted_least_request_orca.oobReportingPeriod: 10 (expected: a duration");
    assertThat(error(Map.of("choiceCount", 11.0)))
        .isEqualTo("weighted_least_request_orca.choiceCount: 11.0 (expected: 2..10)");
  }

  @Test
  void unknownFieldIsIgnoredAndTheRestApplies() {
    ConfigOrError parsed =
        provider.parseLoadBalancingPolicyConfig(
            Map.of("blackoutPeriod", "10s", "enableOobLoadReport", true, "choiceCount", 4.0));

    assertThat(parsed.getError()).isNull();
    OrcaConfig config = (OrcaConfig) parsed.getConfig();
    assertThat(config.enableOob).isTrue();
    assertThat(config.base.choiceCount()).isEqualTo(4);
  }

  @Test
  void applicationUtilizationWinsOverCpuWhenSet() {
    MetricReport both =
        InternalCallMetricRecorder.createMetricReport(0.2, 0.7, 0, 0, 0, Map.of(), Map.of(), Map.of());
    MetricReport cpuOnly =
        InternalCallMetricRecorder.createMetricReport(0.2, 0, 0, 0, 0, Map.of(), Map.of(), Map.of());

    assertThat(OrcaUtilization.of(both)).isEqualTo(0.7);
    assertThat(OrcaUtilization.of(cpuOnly)).isEqualTo(0.2);
  }

  private String error(Map<String, ?> raw) {
    return provider.parseLoadBalancingPolicyConfig(raw).getError().getDescription();
  }
}
