package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Micrometer is an optional dependency: run by the build's {@code without-micrometer} execution,
 * with Micrometer off the class path, a registration registers, changes its weight and closes.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class WithoutMicrometerTest {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  @Test
  void aRegistrationWorksWithMicrometerOffTheClassPath() throws Exception {
    // Run alone (-Dtest=...) in the default execution, Micrometer is present: nothing to prove.
    assumeTrue(Boolean.getBoolean("steelyard.withoutMicrometer"), "needs the without-micrometer run");
    assertThatThrownBy(() -> Class.forName("io.micrometer.core.instrument.MeterRegistry"))
        .isInstanceOf(ClassNotFoundException.class);
    try (ServiceRegistration reg =
        ServiceRegistration.builder(EtcdConnection.of(etcd.endpoints()), "plain", "127.0.0.1:43001")
            .ttl(Duration.ofSeconds(2))
            .listener(state -> {})
            .build()) {
      // 30 s, as in the other registration tests: the first etcd call of a cold JVM on a busy
      // 2-core machine was seen to take over 10 s; a reachable etcd answers in milliseconds.
      reg.start().get(30, TimeUnit.SECONDS);
      reg.setWeightAndWait(4);
      assertThat(reg.state()).isEqualTo(RegistrationState.REGISTERED);
      assertThat(reg.weight()).isEqualTo(4);
    }
  }
}
