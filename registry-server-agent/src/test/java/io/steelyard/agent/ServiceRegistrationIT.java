package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.admin.InstanceStore;
import io.steelyard.registry.admin.InstanceWrite;
import io.steelyard.registry.admin.RegisteredInstance;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Registration against a healthy single-member etcd. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ServiceRegistrationIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private static final AtomicInteger PORTS = new AtomicInteger(50000);
  @RegisterExtension
  @Order(EtcdProbe.AFTER_THE_CLUSTER)
  static final EtcdProbe probe = EtcdProbe.of(etcd);

  private static InstanceStore store;
  private final List<ServiceRegistration> opened = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void connect() {
    store = new InstanceStore(probe.client, KeyLayout.defaults(), Duration.ofSeconds(5));
  }

  @AfterEach
  void closeRegistrations() {
    opened.forEach(ServiceRegistration::close);
  }

  /** A registration of a fresh address, so tests never see each other's keys. */
  private ServiceRegistrationBuilder registration() {
    return ServiceRegistration.builder(
        EtcdConnection.of(etcd.endpoints()), "greeter", "127.0.0.1:" + PORTS.incrementAndGet());
  }

  private ServiceRegistration started(ServiceRegistrationBuilder b) throws Exception {
    ServiceRegistration reg = b.build();
    opened.add(reg);
    reg.start().get(30, TimeUnit.SECONDS); // generous: the first call of a cold JVM on a busy box
    return reg;
  }

  @Test
  void registerPutsTheKeyWithTheLeaseAndThePipeValue() throws Exception {
    ServiceRegistration reg = started(registration().weight(5).ttl(Duration.ofSeconds(7)));

    assertThat(reg.state()).isEqualTo(RegistrationState.REGISTERED);
    assertThat(reg.key()).isEqualTo("/services/greeter/" + reg.address());
    assertThat(probe.value(reg.key())).isEqualTo(reg.address() + "|5");
    assertThat(probe.lease(reg.key())).isNotZero().isEqualTo(reg.leaseId());
    assertThat(probe.grantedTtl(reg.leaseId())).isEqualTo(7);
    assertThat(probe.ttl(reg.leaseId())).isPositive();
  }

  @Test
  void metadataIsWrittenAsEtcdNamingJson() throws Exception {
    ServiceRegistration reg = started(registration().weight(3).metadata(Map.of("zone", "a")));

    assertThat(probe.value(reg.key()))
        .isEqualTo("{\"Op\":0,\"Addr\":\"" + reg.address() + "\",\"Metadata\":{\"weight\":3,\"zone\":\"a\"}}");
  }

  @Test
  void closeRemovesTheKeyAtOnceByRevokingTheLease() throws Exception {
    ServiceRegistration reg = started(registration().ttl(Duration.ofSeconds(30)));
    long lease = reg.leaseId();

    reg.close();

    // Right away, not after the 30 s TTL.
    assertThat(probe.get(reg.key())).isEmpty();
    assertThat(probe.ttl(lease)).isEqualTo(-1);
    assertThat(reg.state()).isEqualTo(RegistrationState.CLOSED);
    reg.close(); // idempotent
  }

  @Test
  void callerOwnedClientStaysOpenAfterClose() throws Exception {
    ServiceRegistration reg =
        ServiceRegistration.builder(probe.client, "greeter", "127.0.0.1:" + PORTS.incrementAndGet())
            .build();
    opened.add(reg);
    reg.start().get(30, TimeUnit.SECONDS);

    reg.close();

    assertThat(probe.get(reg.key())).isEmpty(); // the probe's client still works
  }

  @Test
  void listenerSeesRegisteringRegisteredClosedInOrder() throws Exception {
    List<RegistrationState> seen = new CopyOnWriteArrayList<>();
    ServiceRegistration reg = started(registration().listener(seen::add));
    reg.close();

    assertThat(seen)
        .containsExactly(
            RegistrationState.REGISTERING, RegistrationState.REGISTERED, RegistrationState.CLOSED);
  }

  @Test
  void leaseRevokedFromOutsideIsReRegisteredWithinTwoSeconds() throws Exception {
    ServiceRegistration reg = started(registration().weight(4));
    long lost = reg.leaseId();

    probe.revoke(lost); // etcdctl lease revoke

    await().atMost(Duration.ofSeconds(2)).pollInterval(Duration.ofMillis(50))
        .until(() -> probe.lease(reg.key()) != 0 && probe.lease(reg.key()) != lost);
    assertThat(probe.value(reg.key())).isEqualTo(reg.address() + "|4");
    await().atMost(Duration.ofSeconds(2)).until(reg::state, s -> s == RegistrationState.REGISTERED);
    assertThat(probe.lease(reg.key())).isEqualTo(reg.leaseId());
  }

  @Test
  void operatorDeleteWithALiveLeaseStaysDeleted() throws Exception {
    ServiceRegistration reg = started(registration().ttl(Duration.ofSeconds(2)));
    long lease = reg.leaseId();

    store.apply(InstanceWrite.deregister("greeter", reg.address())); // steelyard deregister

    await().atMost(Duration.ofSeconds(2))
        .until(reg::state, s -> s == RegistrationState.DELETED_BY_OPERATOR);
    assertThat(reg.leaseId()).isZero();
    // Longer than the TTL and several keepalive rounds: nobody writes the key back.
    await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(5))
        .until(() -> probe.get(reg.key()).isEmpty());
    assertThat(reg.state()).isEqualTo(RegistrationState.DELETED_BY_OPERATOR);
    assertThat(probe.ttl(lease)).isEqualTo(-1); // the now useless lease was revoked
  }

  @Test
  void reregisterAfterAnOperatorDeleteWritesTheKeyAgain() throws Exception {
    ServiceRegistration reg = started(registration().weight(2));
    store.apply(InstanceWrite.deregister("greeter", reg.address()));
    await().atMost(Duration.ofSeconds(2))
        .until(reg::state, s -> s == RegistrationState.DELETED_BY_OPERATOR);

    reg.reregister().get(5, TimeUnit.SECONDS);

    assertThat(reg.state()).isEqualTo(RegistrationState.REGISTERED);
    assertThat(probe.value(reg.key())).isEqualTo(reg.address() + "|2");
    assertThat(probe.lease(reg.key())).isEqualTo(reg.leaseId());
  }

  @Test
  void weightUpdateKeepsTheLeaseAndWritesTheNewValue() throws Exception {
    ServiceRegistration reg = started(registration().weight(5));
    long lease = reg.leaseId();

    reg.setWeightAndWait(8);

    assertThat(probe.value(reg.key())).isEqualTo(reg.address() + "|8");
    assertThat(probe.lease(reg.key())).isEqualTo(lease);
    assertThat(reg.leaseId()).isEqualTo(lease);
    assertThat(reg.weight()).isEqualTo(8);
  }

  @Test
  void staleConcurrentWeightUpdateIsRejectedByTheRevisionGuard() throws Exception {
    ServiceRegistration reg = started(registration().weight(5));
    RegisteredInstance readBefore = store.require("greeter", reg.address());

    reg.setWeightAndWait(8); // the key's mod revision moves on

    assertThatThrownBy(() -> store.apply(InstanceWrite.setWeight("greeter", reg.address(), 3), readBefore))
        .isInstanceOfSatisfying(
            RegistryException.class,
            e -> assertThat(e.kind()).isEqualTo(RegistryException.Kind.CONFLICT));
    assertThat(probe.value(reg.key())).isEqualTo(reg.address() + "|8");
    assertThat(probe.lease(reg.key())).isEqualTo(reg.leaseId());
  }

  @Test
  void weightSetWithTheCliIsKeptWhenTheLeaseIsReplaced() throws Exception {
    ServiceRegistration reg = started(registration().weight(5));
    store.apply(InstanceWrite.setWeight("greeter", reg.address(), 9)); // steelyard weight set, from another process
    await().atMost(Duration.ofSeconds(2)).until(reg::weight, w -> w == 9);
    long lost = reg.leaseId();

    probe.revoke(lost);

    await().atMost(Duration.ofSeconds(2))
        .until(() -> probe.lease(reg.key()) != 0 && probe.lease(reg.key()) != lost);
    assertThat(probe.value(reg.key())).isEqualTo(reg.address() + "|9");
  }
}
