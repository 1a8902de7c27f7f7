package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.time.FakeScheduler;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A registration against a real etcd whose every step runs on a fake scheduler: etcd answers in
 * real time, but nothing of the registration happens until the test runs the scheduler. Shows
 * that all of its work goes through the injected scheduler, and none is left after close.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RegistrationFakeTimeIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  @RegisterExtension
  @Order(EtcdProbe.AFTER_THE_CLUSTER)
  static final EtcdProbe probe = EtcdProbe.of(etcd);

  private final FakeScheduler fake = new FakeScheduler();
  private final List<RegistrationState> seen = new CopyOnWriteArrayList<>();
  private ServiceRegistration reg;

  @AfterEach
  void closeRegistration() {
    if (reg != null) {
      CompletableFuture<Void> closed = reg.closeAsync();
      await().atMost(Duration.ofSeconds(10)).until(() -> runsUntil(closed::isDone));
    }
  }

  /** Runs the fake scheduler's due work, then evaluates {@code condition}. */
  private boolean runsUntil(java.util.function.BooleanSupplier condition) {
    fake.runDue();
    return condition.getAsBoolean();
  }

  private ServiceRegistration registered(String address) {
    reg =
        ServiceRegistration.builder(probe.client, "faketime", address)
            .ttl(Duration.ofSeconds(5))
            .listener(seen::add)
            .scheduler(fake, fake.ticker)
            .build();
    reg.start();
    await().atMost(Duration.ofSeconds(10))
        .until(() -> runsUntil(() -> reg.state() == RegistrationState.REGISTERED));
    return reg;
  }

  @Test
  void aLeaseLostIsRecoveredThroughTheInjectedScheduler() throws Exception {
    registered("127.0.0.1:42001");
    long lost = reg.leaseId();

    probe.revoke(lost);

    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
        .until(() -> runsUntil(() -> reg.state() == RegistrationState.REGISTERED
            && reg.leaseId() != lost && probe.lease(reg.key()) == reg.leaseId()));
    assertThat(seen)
        .containsSubsequence(
            RegistrationState.REGISTERED, RegistrationState.RECOVERING, RegistrationState.REGISTERED);
    assertThat(probe.value(reg.key())).isEqualTo("127.0.0.1:42001|1");
  }

  @Test
  void nothingRunsAfterClose() throws Exception {
    registered("127.0.0.1:42002");
    String key = reg.key();
    CompletableFuture<Void> closed = reg.closeAsync();
    await().atMost(Duration.ofSeconds(10)).until(() -> runsUntil(closed::isDone));
    assertThat(probe.get(key)).isEmpty();
    int ran = fake.ran();

    // What a live registration would react to: its key written, then deleted.
    probe.client.getKVClient().put(EtcdProbe.bytes(key), EtcdProbe.bytes("x:1|1"))
        .get(5, TimeUnit.SECONDS);
    probe.client.getKVClient().delete(EtcdProbe.bytes(key)).get(5, TimeUnit.SECONDS);
    fake.forwardTime(Duration.ofHours(1));

    await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(2))
        .until(() -> fake.pending() == 0);
    assertThat(fake.ran()).isEqualTo(ran);
    assertThat(seen.get(seen.size() - 1)).isEqualTo(RegistrationState.CLOSED);
    reg = null;
  }
}
