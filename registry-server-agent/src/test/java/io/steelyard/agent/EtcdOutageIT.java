package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.EtcdMember;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A single etcd member goes away (killed, stopped) and comes back. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class EtcdOutageIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  @RegisterExtension
  @Order(EtcdProbe.AFTER_THE_CLUSTER)
  static final EtcdProbe probe = EtcdProbe.of(etcd);

  private ServiceRegistration reg;

  @AfterEach
  void cleanUp() {
    if (reg != null) {
      reg.close();
    }
    member().start(); // no-op when running
    etcd.awaitHealthy(Duration.ofSeconds(30));
  }

  private static EtcdMember member() {
    return etcd.member(0);
  }

  private ServiceRegistration started(String address, Duration ttl) throws Exception {
    reg =
        ServiceRegistration.builder(EtcdConnection.of(etcd.endpoints()), "outage", address)
            .ttl(ttl)
            .weight(3)
            .operationTimeout(Duration.ofSeconds(1))
            .retryBackoff(Duration.ofMillis(100), Duration.ofSeconds(1))
            .closeTimeout(Duration.ofSeconds(2))
            .build();
    reg.start().get(30, TimeUnit.SECONDS);
    return reg;
  }

  /** The key is in etcd, held by the registration's current, live lease. */
  private boolean heldByCurrentLease() {
    long lease = reg.leaseId();
    return reg.state() == RegistrationState.REGISTERED
        && lease != 0
        && probe.tryGet(reg.key()).map(kv -> kv.getLease() == lease).orElse(false);
  }

  @Test
  void registrationIsBackAfterTheMemberIsKilledAndRestarted() throws Exception {
    started("127.0.0.1:41001", Duration.ofSeconds(3));

    member().kill();
    member().start();

    await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(100))
        .until(this::heldByCurrentLease);
    // And it stays: whatever lease the restart left behind expires without taking the key along.
    await().during(Duration.ofSeconds(5)).atMost(Duration.ofSeconds(8))
        .pollInterval(Duration.ofMillis(200))
        .until(() -> probe.tryGet(reg.key()).isPresent());
    assertThat(probe.value(reg.key())).isEqualTo("127.0.0.1:41001|3");
  }

  @Test
  void keyIsBackWithinTtlPlusTwoSecondsAfterAnOutageLongerThanTheTtl() throws Exception {
    Duration ttl = Duration.ofSeconds(2);
    started("127.0.0.1:41002", ttl);
    long before = reg.leaseId();

    member().stop();
    // jetcd gives up on the keepalive once no answer came within the TTL: the lease counts as lost.
    await().atMost(Duration.ofSeconds(10))
        .until(reg::state, s -> s == RegistrationState.RECOVERING);
    member().start();

    await().atMost(ttl.plusSeconds(2)).pollInterval(Duration.ofMillis(100))
        .until(this::heldByCurrentLease);
    assertThat(reg.leaseId()).isNotEqualTo(before);
    // The old lease (which the restarted etcd may still hold) expiring does not take the key.
    await().during(ttl.plusSeconds(2)).atMost(ttl.plusSeconds(4))
        .pollInterval(Duration.ofMillis(200))
        .until(() -> probe.tryGet(reg.key()).isPresent());
  }

  @Test
  void aWeightSetWhileEtcdCannotBeReachedIsWrittenOnceItCanBe() throws Exception {
    // The lease outlives the outage, so no re-registration writes the weight: only the retry does.
    started("127.0.0.1:41004", Duration.ofSeconds(30));
    long lease = reg.leaseId();
    member().stop();

    var set = reg.setWeight(7);
    await().atMost(Duration.ofSeconds(10)).until(set::isDone);
    assertThat(set).as("etcd could not be reached").isCompletedExceptionally();
    assertThat(reg.weight()).isEqualTo(7);
    member().start();
    etcd.awaitHealthy(Duration.ofSeconds(30));

    await().atMost(Duration.ofSeconds(15)).pollInterval(Duration.ofMillis(100)).ignoreExceptions()
        .until(() -> "127.0.0.1:41004|7".equals(probe.value(reg.key())));
    assertThat(probe.lease(reg.key())).as("the same lease").isEqualTo(lease);
    assertThat(reg.state()).isEqualTo(RegistrationState.REGISTERED);
  }

  @Test
  void closeReturnsWithinItsTimeoutWhenEtcdIsDown() throws Exception {
    started("127.0.0.1:41003", Duration.ofSeconds(2));
    member().stop();

    long t0 = System.nanoTime();
    reg.close();
    long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);

    assertThat(tookMillis).isLessThan(2_000 + 1_000); // closeTimeout 2 s, plus slack
    assertThat(reg.state()).isEqualTo(RegistrationState.CLOSED);
    reg.close(); // still idempotent and immediate
  }
}
