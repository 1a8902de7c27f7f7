package io.steelyard.registry.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.PutOption;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.RegistryException;
import io.steelyard.testkit.EtcdCluster;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** An operator's writes carried out by {@link InstanceStore#apply} against a real etcd. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class InstanceStoreIT {

  private static final String ADDRESS = "10.0.0.7:50051";

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private static Client client;
  private static InstanceStore store;
  private String service;

  @BeforeAll
  static void connect() {
    client = EtcdConnection.of(etcd.endpoints()).connect();
    store = new InstanceStore(client, KeyLayout.defaults(), Duration.ofSeconds(5));
  }

  @AfterAll
  static void disconnect() {
    client.close();
  }

  @BeforeEach
  void serviceNamedForTheTest(TestInfo test) {
    service = test.getTestMethod().orElseThrow().getName();
  }

  @Test
  void aWeightSetKeepsTheLeaseAndTheJsonFormat() throws Exception {
    long lease = grant();
    String json = "{\"Op\":0,\"Addr\":\"" + ADDRESS + "\",\"Metadata\":{\"weight\":2,\"zone\":\"a\"}}";
    put(key(), json, lease);

    InstanceWrite.Result r = store.apply(InstanceWrite.setWeight(service, ADDRESS, 3));

    assertThat(r.message()).isEqualTo(ADDRESS + " weight 2 -> 3");
    KeyValue kv = get(key()).orElseThrow();
    assertThat(kv.getLease()).isEqualTo(lease);
    assertThat(text(kv)).isEqualTo(json.replace("\"weight\":2", "\"weight\":3"));
    assertThat(r.after().modRevision()).isEqualTo(kv.getModRevision());
  }

  @Test
  void aDrainRemembersTheWeightOnTheLeaseAndUndrainRestoresIt() throws Exception {
    long lease = grant();
    put(key(), ADDRESS + "|5", lease);

    InstanceWrite.Result drained = store.apply(InstanceWrite.drain(service, ADDRESS));

    KeyValue note = get(KeyLayout.defaults().drainNoteKey(service, ADDRESS)).orElseThrow();
    assertThat(text(note)).isEqualTo("5");
    assertThat(note.getLease()).isEqualTo(lease);
    assertThat(drained.after().drainedFromWeight()).isEqualTo(5);
    assertThat(store.require(service, ADDRESS).drainedFromWeight()).isEqualTo(5);
    assertThat(store.list(service, false)).singleElement()
        .satisfies(i -> assertThat(i.drainedFromWeight()).isEqualTo(5));

    InstanceWrite.Result undrained = store.apply(InstanceWrite.undrain(service, ADDRESS));

    assertThat(undrained.message()).isEqualTo(ADDRESS + " weight 0 -> 5");
    assertThat(text(get(key()).orElseThrow())).isEqualTo(ADDRESS + "|5");
    assertThat(get(KeyLayout.defaults().drainNoteKey(service, ADDRESS))).isEmpty();
  }

  @Test
  void aWriteGuardedByAStaleReadIsAConflictAndWritesNothing() throws Exception {
    put(key(), ADDRESS + "|5", 0);
    RegisteredInstance read = store.require(service, ADDRESS);
    put(key(), ADDRESS + "|6", 0); // another writer, after the read

    assertThatThrownBy(() -> store.apply(InstanceWrite.setWeight(service, ADDRESS, 8), read))
        .isInstanceOfSatisfying(
            RegistryException.class,
            e -> assertThat(e.kind()).isEqualTo(RegistryException.Kind.CONFLICT))
        .hasMessageContaining("changed since it was read");
    assertThat(text(get(key()).orElseThrow())).isEqualTo(ADDRESS + "|6");
  }

  @Test
  void noWriteCreatesAKey() {
    for (InstanceWrite w : List.of(
        InstanceWrite.setWeight(service, ADDRESS, 3),
        InstanceWrite.drain(service, ADDRESS),
        InstanceWrite.undrain(service, ADDRESS),
        InstanceWrite.deregister(service, ADDRESS))) {
      assertThatThrownBy(() -> store.apply(w))
          .as(w.toString())
          .isInstanceOfSatisfying(
              RegistryException.class,
              e -> assertThat(e.kind()).isEqualTo(RegistryException.Kind.NOT_REGISTERED))
          .hasMessage(ADDRESS + " is not registered under " + service + " (no key " + key() + ")");
    }
    assertThat(store.list(service, false)).isEmpty();
  }

  @Test
  void aDeregisterDeletesTheKeyAndItsDrainNote() throws Exception {
    put(key(), ADDRESS + "|5", grant());
    store.apply(InstanceWrite.drain(service, ADDRESS));

    InstanceWrite.Result r = store.apply(InstanceWrite.deregister(service, ADDRESS));

    assertThat(r.message()).isEqualTo("deleted " + key());
    assertThat(get(key())).isEmpty();
    assertThat(get(KeyLayout.defaults().drainNoteKey(service, ADDRESS))).isEmpty();
  }

  @Test
  void aWriteToAnotherInstanceThanTheOneReadIsRefused() throws Exception {
    put(key(), ADDRESS + "|5", 0);
    RegisteredInstance read = store.require(service, ADDRESS);

    assertThatThrownBy(() -> store.apply(InstanceWrite.drain(service, "10.0.0.8:50051"), read))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(text(get(key()).orElseThrow())).isEqualTo(ADDRESS + "|5");
  }

  private String key() {
    return KeyLayout.defaults().instanceKey(service, ADDRESS);
  }

  /** Generous timeouts: the first call of a cold JVM on a busy machine. */
  private static long grant() throws Exception {
    return client.getLeaseClient().grant(60).get(30, TimeUnit.SECONDS).getID();
  }

  private static void put(String key, String value, long lease) throws Exception {
    PutOption option = lease == 0 ? PutOption.DEFAULT : PutOption.builder().withLeaseId(lease).build();
    client.getKVClient().put(bytes(key), bytes(value), option).get(30, TimeUnit.SECONDS);
  }

  private static Optional<KeyValue> get(String key) throws Exception {
    return client.getKVClient().get(bytes(key)).get(30, TimeUnit.SECONDS).getKvs().stream().findFirst();
  }

  private static String text(KeyValue kv) {
    return kv.getValue().toString(StandardCharsets.UTF_8);
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
