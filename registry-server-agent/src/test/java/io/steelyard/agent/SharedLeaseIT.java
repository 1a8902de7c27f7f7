package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.admin.InstanceStore;
import io.steelyard.registry.admin.InstanceWrite;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.EtcdMember;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Registrations sharing one lease ({@link SharedLease}) against a real etcd. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SharedLeaseIT {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  private static final AtomicInteger PORTS = new AtomicInteger(51000);
  @RegisterExtension
  @Order(EtcdProbe.AFTER_THE_CLUSTER)
  static final EtcdProbe probe = EtcdProbe.of(etcd);

  private static InstanceStore store;
  private final List<AutoCloseable> opened = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void connect() {
    store = new InstanceStore(probe.client, KeyLayout.defaults(), Duration.ofSeconds(5));
  }

  @AfterEach
  void closeEverything() throws Exception {
    for (AutoCloseable c : opened) {
      c.close();
    }
  }

  private static EtcdMember member() {
    return etcd.member(0);
  }

  private SharedLease sharedLease(Duration ttl) {
    SharedLease lease = SharedLease.builder(EtcdConnection.of(etcd.endpoints())).ttl(ttl).build();
    opened.add(0, lease); // closed after its registrations
    return lease;
  }

  /** {@code n} registrations on {@code lease}, started and registered. */
  private List<ServiceRegistration> registered(SharedLease lease, int n) throws Exception {
    List<ServiceRegistration> regs = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      ServiceRegistration reg =
          ServiceRegistration.builder(lease, "shared", "127.0.0.1:" + PORTS.incrementAndGet())
              .weight(i + 1)
              .build();
      opened.add(reg);
      regs.add(reg);
    }
    CompletableFuture.allOf(regs.stream().map(ServiceRegistration::start).toArray(CompletableFuture<?>[]::new))
        .get(30, TimeUnit.SECONDS);
    return regs;
  }

  @Test
  void everyKeyIsWrittenWithTheOneLeaseKeptAliveByOneStream() throws Exception {
    double grantedBefore = member().metric("etcd_debugging_lease_granted_total");
    double streamsBefore = member().metric("grpc_server_started_total", "grpc_method", "LeaseKeepAlive");
    SharedLease lease = sharedLease(Duration.ofSeconds(5));

    List<ServiceRegistration> regs = registered(lease, 3);

    assertThat(lease.leaseId()).isNotZero();
    for (ServiceRegistration reg : regs) {
      assertThat(reg.leaseId()).isEqualTo(lease.leaseId());
      assertThat(probe.lease(reg.key())).isEqualTo(lease.leaseId());
    }
    assertThat(probe.value(regs.get(2).key())).isEqualTo(regs.get(2).address() + "|3");
    assertThat(lease.registrations()).isEqualTo(3);
    assertThat(member().metric("etcd_debugging_lease_granted_total") - grantedBefore).isEqualTo(1);
    // Longer than the TTL: the one stream keeps the one lease, and with it every key, alive.
    await().during(Duration.ofSeconds(7)).atMost(Duration.ofSeconds(10))
        .until(() -> regs.stream().allMatch(r -> probe.tryGet(r.key()).isPresent()));
    assertThat(member().metric("grpc_server_started_total", "grpc_method", "LeaseKeepAlive") - streamsBefore)
        .as("keepalive streams opened").isEqualTo(1);
  }

  @Test
  void closingOneRegistrationDeletesOnlyItsKeyAndTheLastRevokesTheLease() throws Exception {
    SharedLease lease = sharedLease(Duration.ofSeconds(30));
    List<ServiceRegistration> regs = registered(lease, 2);
    long id = lease.leaseId();

    regs.get(0).close();

    assertThat(probe.get(regs.get(0).key())).isEmpty(); // at once, not after the 30 s TTL
    assertThat(probe.lease(regs.get(1).key())).isEqualTo(id);
    assertThat(probe.ttl(id)).isPositive();
    assertThat(lease.registrations()).isEqualTo(1);

    regs.get(1).close();

    assertThat(probe.get(regs.get(1).key())).isEmpty();
    assertThat(probe.ttl(id)).isEqualTo(-1);
    assertThat(lease.leaseId()).isZero();
  }

  @Test
  void closingOneRegistrationLeavesAKeySomeoneElseWroteSince() throws Exception {
    SharedLease lease = sharedLease(Duration.ofSeconds(30));
    List<ServiceRegistration> regs = registered(lease, 2);
    ServiceRegistration taken = regs.get(0);
    // Another process claims the address with a lease of its own (a restarted server, say).
    long other = probe.client.getLeaseClient().grant(30).get(5, TimeUnit.SECONDS).getID();
    probe.client.getKVClient()
        .put(EtcdProbe.bytes(taken.key()), EtcdProbe.bytes(taken.address() + "|9"),
            io.etcd.jetcd.options.PutOption.builder().withLeaseId(other).build())
        .get(5, TimeUnit.SECONDS);

    taken.close();

    assertThat(probe.lease(taken.key())).isEqualTo(other);
    assertThat(probe.value(taken.key())).isEqualTo(taken.address() + "|9");
    probe.revoke(other);
  }

  @Test
  void losingTheSharedLeaseRegistersEveryKeyAgainWithOneNewLease() throws Exception {
    SharedLease lease = sharedLease(Duration.ofSeconds(10));
    List<ServiceRegistration> regs = registered(lease, 3);
    long lost = lease.leaseId();

    probe.revoke(lost); // etcdctl lease revoke: every key of the process goes at once

    await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(50))
        .until(() -> regs.stream().allMatch(r -> r.state() == RegistrationState.REGISTERED
            && r.leaseId() != lost && probe.lease(r.key()) == r.leaseId()));
    long renewed = lease.leaseId();
    assertThat(renewed).isNotEqualTo(lost).isNotZero();
    for (ServiceRegistration reg : regs) {
      assertThat(probe.lease(reg.key())).isEqualTo(renewed);
    }
    assertThat(probe.value(regs.get(1).key())).isEqualTo(regs.get(1).address() + "|2");
  }

  @Test
  void aWeightUpdateKeepsTheSharedLease() throws Exception {
    SharedLease lease = sharedLease(Duration.ofSeconds(10));
    List<ServiceRegistration> regs = registered(lease, 2);

    regs.get(0).setWeightAndWait(8);

    assertThat(probe.value(regs.get(0).key())).isEqualTo(regs.get(0).address() + "|8");
    assertThat(probe.lease(regs.get(0).key())).isEqualTo(lease.leaseId());
    assertThat(probe.lease(regs.get(1).key())).isEqualTo(lease.leaseId());
  }

  @Test
  void anOperatorDeleteTakesOutOneRegistrationAndKeepsTheLease() throws Exception {
    SharedLease lease = sharedLease(Duration.ofSeconds(10));
    List<ServiceRegistration> regs = registered(lease, 2);
    long id = lease.leaseId();

    store.apply(InstanceWrite.deregister("shared", regs.get(0).address())); // steelyard deregister

    await().atMost(Duration.ofSeconds(5))
        .until(regs.get(0)::state, s -> s == RegistrationState.DELETED_BY_OPERATOR);
    assertThat(probe.ttl(id)).isPositive();
    assertThat(probe.lease(regs.get(1).key())).isEqualTo(id);
    assertThat(lease.registrations()).isEqualTo(1);

    regs.get(0).reregister().get(10, TimeUnit.SECONDS);

    assertThat(probe.lease(regs.get(0).key())).isEqualTo(id);
  }

  @Test
  void closingTheSharedLeaseClosesItsRegistrationsAndRevokesIt() throws Exception {
    SharedLease lease = sharedLease(Duration.ofSeconds(30));
    List<ServiceRegistration> regs = registered(lease, 3);
    long id = lease.leaseId();

    lease.close();

    assertThat(regs).allMatch(r -> r.state() == RegistrationState.CLOSED);
    assertThat(regs).allMatch(r -> probe.get(r.key()).isEmpty());
    assertThat(probe.ttl(id)).isEqualTo(-1);
    assertThatThrownBy(() -> ServiceRegistration.builder(lease, "shared", "127.0.0.1:1").build())
        .isInstanceOf(IllegalStateException.class);
  }

  @Test
  void aTtlOtherThanTheSharedLeasesIsRefused() {
    SharedLease lease = sharedLease(Duration.ofSeconds(10));

    assertThatThrownBy(
            () -> ServiceRegistration.builder(lease, "shared", "127.0.0.1:1").ttl(Duration.ofSeconds(5)).build())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("ttl: 5s")
        .hasMessageContaining("shared lease's 10s");
  }

  /**
   * What sharing is for: jetcd keeps every lease alive every TTL/3, so n leases cost etcd's
   * leader n keepalives per TTL/3, one shared lease one. Counted by etcd itself.
   */
  @Test
  void aSharedLeaseCostsEtcdOneKeepaliveWhereSeparateLeasesCostOneEach() throws Exception {
    int n = 50;
    Duration ttl = Duration.ofSeconds(3); // a keepalive per lease every second
    Duration window = Duration.ofSeconds(6);
    List<ServiceRegistration> separate = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      ServiceRegistration reg =
          ServiceRegistration.builder(probe.client, "separate", "127.0.0.1:" + PORTS.incrementAndGet())
              .ttl(ttl)
              .build();
      opened.add(reg);
      separate.add(reg);
    }
    CompletableFuture.allOf(separate.stream().map(ServiceRegistration::start).toArray(CompletableFuture<?>[]::new))
        .get(30, TimeUnit.SECONDS);
    double separateRenewals = renewalsDuring(window);
    for (ServiceRegistration reg : separate) {
      reg.close();
    }

    SharedLease lease = SharedLease.builder(probe.client).ttl(ttl).build();
    opened.add(0, lease);
    List<ServiceRegistration> shared = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      ServiceRegistration reg =
          ServiceRegistration.builder(lease, "together", "127.0.0.1:" + PORTS.incrementAndGet()).build();
      opened.add(reg);
      shared.add(reg);
    }
    CompletableFuture.allOf(shared.stream().map(ServiceRegistration::start).toArray(CompletableFuture<?>[]::new))
        .get(30, TimeUnit.SECONDS);
    double sharedRenewals = renewalsDuring(window);

    // Expected: about 6 x 50 = 300 against about 6; the bounds leave room for a slow machine.
    assertThat(sharedRenewals).as("renewals of one shared lease in %s", window).isBetween(1.0, 15.0);
    assertThat(separateRenewals).as("renewals of %s leases in %s", n, window).isGreaterThan(20 * sharedRenewals);
  }

  private static double renewalsDuring(Duration window) {
    double before = member().metric("etcd_debugging_lease_renewed_total");
    long until = System.nanoTime() + window.toNanos();
    // Awaitility would poll; the point is to let time pass, bounded and measured.
    await().pollDelay(window).atMost(window.plusSeconds(5)).until(() -> System.nanoTime() - until >= 0);
    return member().metric("etcd_debugging_lease_renewed_total") - before;
  }
}
