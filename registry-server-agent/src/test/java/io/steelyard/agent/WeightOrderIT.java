package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.admin.InstanceStore;
import io.steelyard.registry.admin.InstanceWrite;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.FaultProxy;
import io.steelyard.testkit.time.FakeScheduler;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * After the agent quiesces, etcd holds each registration's last weight set, and an acknowledged
 * weight is never overwritten by an older one: the contract the LoadHeld benchmark found broken
 * through etcd's gRPC proxy (docs/benchmarks.md, "Load held"). The agent reaches etcd through a
 * {@link FaultProxy}, whose black hole holds its calls (a stalled proxy, a slow grant) and then
 * delivers them in order.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class WeightOrderIT {

  /** Long enough that no call held by the black hole times out in these tests. */
  private static final Duration OPERATION_TIMEOUT = Duration.ofSeconds(30);

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  @RegisterExtension
  @Order(EtcdProbe.AFTER_THE_CLUSTER)
  static final EtcdProbe probe = EtcdProbe.of(etcd);

  private FaultProxy proxy;
  private final List<AutoCloseable> opened = new CopyOnWriteArrayList<>();

  @BeforeEach
  void startProxy() {
    URI member = etcd.clientEndpoints().get(0);
    proxy = FaultProxy.start("agent", new InetSocketAddress(member.getHost(), member.getPort()));
  }

  @AfterEach
  void closeEverything() throws Exception {
    proxy.pass();
    for (AutoCloseable c : opened) {
      c.close();
    }
    proxy.close();
  }

  private SharedLease sharedLease(Duration ttl) {
    SharedLease lease =
        SharedLease.builder(EtcdConnection.of(proxy.uri("http").toString()))
            .ttl(ttl)
            .operationTimeout(OPERATION_TIMEOUT)
            .build();
    opened.add(0, lease); // closed after its registrations
    return lease;
  }

  private ServiceRegistration registered(SharedLease lease, String address, int weight) throws Exception {
    ServiceRegistration reg =
        ServiceRegistration.builder(lease, "ordered", address)
            .weight(weight)
            .operationTimeout(OPERATION_TIMEOUT)
            .build();
    opened.add(reg);
    reg.start().get(30, TimeUnit.SECONDS);
    return reg;
  }

  @Test
  void aWeightSetWhileTheLostLeaseIsRegisteredAgainReachesEtcd() throws Exception {
    SharedLease lease = sharedLease(Duration.ofSeconds(3));
    ServiceRegistration reg = registered(lease, "127.0.0.1:45001", 1);

    // No keepalive answer within the TTL: the lease is lost, and the grant of the next one hangs.
    proxy.blackhole();
    await().atMost(Duration.ofSeconds(20))
        .until(reg::state, s -> s == RegistrationState.RECOVERING);
    reg.setWeight(7).get(5, TimeUnit.SECONDS); // only remembered, acknowledged at once
    proxy.pass(); // the grant is answered, the key written again

    await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(100)).ignoreExceptions()
        .untilAsserted(() -> {
          assertThat(reg.state()).isEqualTo(RegistrationState.REGISTERED);
          assertThat(probe.lease(reg.key())).isEqualTo(lease.leaseId());
          assertThat(probe.value(reg.key())).isEqualTo("127.0.0.1:45001|7");
        });
    assertThat(reg.weight()).isEqualTo(7);
  }

  @Test
  void weightsSetInQuickSuccessionAreWrittenInOrderWithoutConflictingWithEachOther() throws Exception {
    SharedLease lease = sharedLease(Duration.ofSeconds(30));
    ServiceRegistration reg = registered(lease, "127.0.0.1:45002", 1);

    // Both changes are issued while etcd's answers are held (a stalled proxy), then delivered.
    proxy.blackhole();
    CompletableFuture<Void> first = reg.setWeight(5);
    CompletableFuture<Void> second = reg.setWeight(6);
    await().atMost(Duration.ofSeconds(5)).until(reg::weight, w -> w == 6);
    proxy.pass();

    // Neither is reported as a conflict: the only writer of the key was the registration itself.
    first.get(20, TimeUnit.SECONDS);
    second.get(20, TimeUnit.SECONDS);
    assertThat(probe.value(reg.key())).isEqualTo("127.0.0.1:45002|6");
    assertThat(probe.lease(reg.key())).isEqualTo(lease.leaseId());
    assertThat(reg.weight()).isEqualTo(6);
  }

  @Test
  void aTimedOutWriteThatLandsLateIsNotTakenForAnOperatorsWeight() throws Exception {
    SharedLease lease = sharedLease(Duration.ofSeconds(30));
    ServiceRegistration reg =
        ServiceRegistration.builder(lease, "ordered", "127.0.0.1:45005")
            .weight(1)
            .operationTimeout(Duration.ofSeconds(1))
            .retryBackoff(Duration.ofSeconds(10), Duration.ofSeconds(10)) // no rewrite meanwhile
            .build();
    opened.add(reg);
    reg.start().get(30, TimeUnit.SECONDS);

    proxy.blackhole();
    CompletableFuture<Void> five = reg.setWeight(5);
    await().atMost(Duration.ofSeconds(10)).until(five::isDone); // not answered within 1 s
    CompletableFuture<Void> six = reg.setWeight(6);
    await().atMost(Duration.ofSeconds(10)).until(six::isDone);
    assertThat(five).isCompletedExceptionally();
    assertThat(six).isCompletedExceptionally();
    // The write of 5 lands late, as one whose read was answered and whose guarded transaction
    // reached etcd after the timeout does: the same value, with the registration's lease. (The
    // proxy cannot pass a read and hold the transaction behind it, so etcd is written directly.)
    probe.client.getKVClient()
        .put(EtcdProbe.bytes(reg.key()), EtcdProbe.bytes("127.0.0.1:45005|5"),
            io.etcd.jetcd.options.PutOption.builder().withLeaseId(lease.leaseId()).build())
        .get(5, TimeUnit.SECONDS);
    proxy.pass(); // the watch event of |5 reaches the registration

    // 6, the last weight set (failed, remembered), is what etcd ends with, long before the retry.
    await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(100)).ignoreExceptions()
        .untilAsserted(() -> assertThat(probe.value(reg.key())).isEqualTo("127.0.0.1:45005|6"));
    assertThat(reg.weight()).isEqualTo(6);
  }

  @Test
  void aWeightSetWhileTheKeyIsBeingWrittenAgainReachesEtcd() throws Exception {
    // Every step of the registration runs on a fake scheduler, so the test decides what the
    // registration does between the put leaving and its answer coming back.
    FakeScheduler fake = new FakeScheduler();
    SharedLease lease =
        SharedLease.builder(EtcdConnection.of(proxy.uri("http").toString()))
            .ttl(Duration.ofSeconds(30))
            .operationTimeout(OPERATION_TIMEOUT)
            .scheduler(fake, fake.ticker)
            .build();
    ServiceRegistration reg =
        ServiceRegistration.builder(lease, "ordered", "127.0.0.1:45003")
            .weight(1)
            .operationTimeout(OPERATION_TIMEOUT)
            .scheduler(fake, fake.ticker)
            .build();
    // Keeps the shared lease alive while reg is deregistered (the last one to leave revokes it).
    ServiceRegistration other =
        ServiceRegistration.builder(lease, "ordered", "127.0.0.1:45004")
            .scheduler(fake, fake.ticker)
            .build();
    try {
      reg.start();
      other.start();
      await().atMost(Duration.ofSeconds(10))
          .until(() -> runsUntil(fake, () -> reg.state() == RegistrationState.REGISTERED
              && other.state() == RegistrationState.REGISTERED));
      // An operator's deregister, then reregister(): the key is written again with the live
      // shared lease, no grant in between.
      new InstanceStore(probe.client, KeyLayout.defaults(), Duration.ofSeconds(5))
          .apply(InstanceWrite.deregister("ordered", "127.0.0.1:45003"));
      await().atMost(Duration.ofSeconds(10))
          .until(() -> runsUntil(fake, () -> reg.state() == RegistrationState.DELETED_BY_OPERATOR));

      proxy.blackhole();
      reg.reregister();
      fake.runDue(); // the put of weight 1 leaves, and is held
      CompletableFuture<Void> set = reg.setWeight(7);
      fake.runDue();
      assertThat(set).as("remembered, acknowledged at once").isCompleted();
      assertThat(reg.state()).isEqualTo(RegistrationState.REGISTERING);
      proxy.pass(); // the put of weight 1 lands

      await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(50)).ignoreExceptions()
          .until(() -> runsUntil(fake, () -> reg.state() == RegistrationState.REGISTERED
              && "127.0.0.1:45003|7".equals(probe.value(reg.key()))));
      assertThat(probe.lease(reg.key())).isEqualTo(lease.leaseId());
      assertThat(reg.weight()).isEqualTo(7);
    } finally {
      CompletableFuture<Void> closed = CompletableFuture.allOf(reg.closeAsync(), other.closeAsync());
      await().atMost(Duration.ofSeconds(20)).until(() -> runsUntil(fake, closed::isDone));
      CompletableFuture<Void> leaseClosed = CompletableFuture.runAsync(lease::close);
      await().atMost(Duration.ofSeconds(40)).until(() -> runsUntil(fake, leaseClosed::isDone));
    }
  }

  /** Runs the fake scheduler's due work, then evaluates {@code condition}. */
  private static boolean runsUntil(FakeScheduler fake, BooleanSupplier condition) {
    fake.runDue();
    return condition.getAsBoolean();
  }
}
