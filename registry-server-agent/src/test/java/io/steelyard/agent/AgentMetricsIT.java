package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.admin.InstanceStore;
import io.steelyard.registry.admin.InstanceWrite;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The registration meters after a scripted sequence against a real etcd: register, weight change,
 * an operator's drain, etcd stopped for longer than the TTL and started again, a revoked lease.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class AgentMetricsIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private final MeterRegistry meters = new SimpleMeterRegistry();
  private ServiceRegistration reg;

  @AfterEach
  void cleanUp() {
    if (reg != null) {
      reg.close();
    }
    etcd.member(0).start(); // no-op when running
    etcd.awaitHealthy(Duration.ofSeconds(30));
  }

  private ServiceRegistration started(String address) throws Exception {
    reg =
        ServiceRegistration.builder(EtcdConnection.of(etcd.endpoints()), "metered", address)
            .ttl(Duration.ofSeconds(2))
            .weight(3)
            .operationTimeout(Duration.ofSeconds(1))
            .retryBackoff(Duration.ofMillis(100), Duration.ofSeconds(1))
            .closeTimeout(Duration.ofSeconds(2))
            .build();
    AgentMetrics.of(meters).bind(reg);
    reg.start().get(30, TimeUnit.SECONDS);
    return reg;
  }

  private double gauge(String name) {
    return meters.get(name).tags("service", "metered", "address", reg.address()).gauge().value();
  }

  private double recoveries(RecoveryCause cause) {
    return meters.get(AgentMetrics.RECOVERIES)
        .tags("service", "metered", "address", reg.address(), "cause", cause.tag())
        .counter().count();
  }

  private double allRecoveries() {
    double sum = 0;
    for (RecoveryCause c : RecoveryCause.values()) {
      sum += recoveries(c);
    }
    return sum;
  }

  @Test
  void metersFollowRegisterWeightChangeDrainAndAnEtcdOutage() throws Exception {
    started("127.0.0.1:42001");
    assertThat(gauge(AgentMetrics.REGISTERED)).isEqualTo(1);
    assertThat(gauge(AgentMetrics.WEIGHT)).isEqualTo(3);
    assertThat(allRecoveries()).isZero();

    reg.setWeightAndWait(7);
    assertThat(gauge(AgentMetrics.WEIGHT)).isEqualTo(7);

    // An operator drains it with the CLI's write path: the agent adopts the weight it sees.
    try (Client client = EtcdConnection.of(etcd.endpoints()).connect()) {
      new InstanceStore(client, KeyLayout.defaults(), Duration.ofSeconds(5))
          .apply(InstanceWrite.setWeight("metered", reg.address(), 0));
    }
    await().atMost(Duration.ofSeconds(10)).until(() -> gauge(AgentMetrics.WEIGHT) == 0);
    assertThat(gauge(AgentMetrics.REGISTERED)).isEqualTo(1);

    etcd.member(0).stop();
    await().atMost(Duration.ofSeconds(15)).until(() -> gauge(AgentMetrics.REGISTERED) == 0);
    assertThat(recoveries(RecoveryCause.KEEPALIVE_TIMEOUT)).isEqualTo(1);
    etcd.member(0).start();

    await().atMost(Duration.ofSeconds(20)).until(() -> gauge(AgentMetrics.REGISTERED) == 1);
    assertThat(gauge(AgentMetrics.WEIGHT)).isZero(); // still drained after the recovery
    assertThat(allRecoveries()).isEqualTo(1);
  }

  @Test
  void aRevokedLeaseCountsOneRecoveryWithACauseThatSaysTheLeaseWentAway() throws Exception {
    started("127.0.0.1:42002");
    long lease = reg.leaseId();
    try (Client client = EtcdConnection.of(etcd.endpoints()).connect()) {
      client.getLeaseClient().revoke(lease).get(5, TimeUnit.SECONDS);
    }
    await().atMost(Duration.ofSeconds(15))
        .until(() -> reg.state() == RegistrationState.REGISTERED && reg.leaseId() != lease);
    assertThat(gauge(AgentMetrics.REGISTERED)).isEqualTo(1);
    // Either the keepalive (NOT_FOUND) or the key's watch notices first; one recovery either way.
    assertThat(allRecoveries()).isEqualTo(1);
    assertThat(recoveries(RecoveryCause.KEEPALIVE_TIMEOUT)).isZero();
  }

  @Test
  void closingTheBindingRemovesTheMeters() throws Exception {
    started("127.0.0.1:42003");
    AutoCloseable second = AgentMetrics.of(new SimpleMeterRegistry()).bind(reg);
    assertThat(meters.find(AgentMetrics.REGISTERED).gauges()).hasSize(1);
    second.close(); // another registry's binding: ours stays
    assertThat(meters.find(AgentMetrics.REGISTERED).gauges()).hasSize(1);

    MeterRegistry own = new SimpleMeterRegistry();
    AutoCloseable binding = AgentMetrics.of(own).bind(reg);
    assertThat(own.getMeters()).hasSize(2 + RecoveryCause.values().length);
    binding.close();
    assertThat(own.getMeters()).isEmpty();
  }
}
