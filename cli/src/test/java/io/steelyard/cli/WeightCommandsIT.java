package io.steelyard.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.KeyValue;
import io.steelyard.agent.ServiceRegistration;
import io.steelyard.registry.admin.RegisteredInstance;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@code weight get/set}, {@code drain} and {@code undrain} against a real etcd. */
@Timeout(60)
class WeightCommandsIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  @RegisterExtension
  @Order(CliFixture.AFTER_THE_CLUSTER)
  static final CliFixture fixture = CliFixture.of(etcd);

  // Test instances are made after the fixture connected.
  private final Cli cli = fixture.cli();
  private final Keyspace keys = fixture.keys();

  private String key(String address) {
    return "/services/" + fixture.service() + "/" + address;
  }

  @Test
  void getPrintsJustTheWeight() {
    keys.put(key("10.0.0.7:50051"), "10.0.0.7:50051|5", keys.grant(60));

    Cli.Result r = cli.run("weight", "get", fixture.service(), "10.0.0.7:50051");

    assertThat(r.exitCode()).as(r.toString()).isZero();
    assertThat(r.out()).isEqualTo("5\n");
    assertThat(r.err()).isEmpty();
  }

  @Test
  void getOfAnUnregisteredAddressExitsOne() {
    Cli.Result r = cli.run("weight", "get", fixture.service(), "10.0.0.9:1");

    assertThat(r.exitCode()).isEqualTo(1);
    assertThat(r.err())
        .isEqualTo(
            "steelyard: 10.0.0.9:1 is not registered under " + fixture.service() + " (no key "
                + key("10.0.0.9:1") + ")\n");
  }

  @Test
  void setKeepsTheLeaseAndTheFormat() {
    long lease = keys.grant(60);
    keys.put(key("10.0.0.7:50051"), "10.0.0.7:50051|5", lease);
    keys.put(
        key("10.0.0.8:50051"),
        "{\"Op\":0,\"Addr\":\"10.0.0.8:50051\",\"Metadata\":{\"weight\":2,\"zone\":\"a\"}}",
        lease);

    Cli.Result pipe = cli.run("weight", "set", fixture.service(), "10.0.0.7:50051", "8");
    Cli.Result json = cli.run("weight", "set", fixture.service(), "10.0.0.8:50051", "3");

    assertThat(pipe.exitCode()).as(pipe.toString()).isZero();
    assertThat(pipe.out()).isEqualTo("10.0.0.7:50051 weight 5 -> 8\n");
    assertThat(json.exitCode()).as(json.toString()).isZero();
    assertThat(keys.get(key("10.0.0.7:50051")).orElseThrow().getLease()).isEqualTo(lease);
    assertThat(keys.value(key("10.0.0.7:50051"))).isEqualTo("10.0.0.7:50051|8");
    assertThat(keys.get(key("10.0.0.8:50051")).orElseThrow().getLease()).isEqualTo(lease);
    assertThat(keys.value(key("10.0.0.8:50051")))
        .isEqualTo("{\"Op\":0,\"Addr\":\"10.0.0.8:50051\",\"Metadata\":{\"weight\":3,\"zone\":\"a\"}}");
  }

  @Test
  void setOnAKeyOwnedByARunningAgentKeepsTheAgentsLease() throws Exception {
    try (ServiceRegistration agent =
        ServiceRegistration.builder(fixture.client(), fixture.service(), "10.0.0.7:50051").weight(5).build()) {
      agent.start().get(30, java.util.concurrent.TimeUnit.SECONDS);
      long agentLease = agent.leaseId();

      Cli.Result r = cli.run("weight", "set", fixture.service(), "10.0.0.7:50051", "8");

      assertThat(r.exitCode()).as(r.toString()).isZero();
      KeyValue kv = keys.get(key("10.0.0.7:50051")).orElseThrow();
      assertThat(kv.getLease()).isEqualTo(agentLease);
      assertThat(Keyspace.text(kv.getValue())).isEqualTo("10.0.0.7:50051|8");
      await().atMost(Duration.ofSeconds(5)).until(agent::weight, w -> w == 8);
    }
    // The agent stopped and revoked its lease: the rewritten key went with it.
    assertThat(keys.get(key("10.0.0.7:50051"))).isEmpty();
  }

  @Test
  void setOfAnUnregisteredAddressExitsOneAndCreatesNoKey() {
    Keyspace.Snapshot before = keys.snapshot();

    Cli.Result r = cli.run("weight", "set", fixture.service(), "10.0.0.9:1", "3");

    assertThat(r.exitCode()).isEqualTo(1);
    assertThat(r.err()).startsWith("steelyard: 10.0.0.9:1 is not registered under " + fixture.service());
    assertThat(keys.snapshot()).isEqualTo(before);
  }

  @Test
  void setThatLosesARaceExitsOneAndKeepsTheOtherWrite() {
    long lease = keys.grant(60);
    keys.put(key("10.0.0.7:50051"), "10.0.0.7:50051|5", lease);
    // Another writer changes the key between the command's read and its guarded write.
    Cli racing = cli.withWriteRunner((store, write) -> {
      RegisteredInstance read = store.require(write.service(), write.address());
      keys.put(key("10.0.0.7:50051"), "10.0.0.7:50051|6", lease);
      return store.apply(write, read);
    });

    Cli.Result r = racing.run("weight", "set", fixture.service(), "10.0.0.7:50051", "8");

    assertThat(r.exitCode()).isEqualTo(1);
    assertThat(r.err().lines().toList()).hasSize(1);
    assertThat(r.err()).contains("changed since it was read");
    assertThat(keys.value(key("10.0.0.7:50051"))).isEqualTo("10.0.0.7:50051|6");
  }

  @Test
  void setOfAnUnreadableValueExitsOneAndLeavesIt() {
    keys.put(key("10.0.0.7:50051"), "10.0.0.7:50051|lots");

    Cli.Result r = cli.run("weight", "set", fixture.service(), "10.0.0.7:50051", "8");

    assertThat(r.exitCode()).isEqualTo(1);
    assertThat(r.err()).contains("unreadable value").contains("'lots'");
    assertThat(keys.value(key("10.0.0.7:50051"))).isEqualTo("10.0.0.7:50051|lots");
  }

  @Test
  void setOfAKeyWithoutLeaseKeepsItWithoutLease() {
    keys.put(key("10.0.0.7:50051"), "10.0.0.7:50051|5");

    Cli.Result r = cli.run("weight", "set", fixture.service(), "10.0.0.7:50051", "2");

    assertThat(r.exitCode()).as(r.toString()).isZero();
    assertThat(keys.get(key("10.0.0.7:50051")).orElseThrow().getLease()).isZero();
  }

  @Test
  void drainSetsZeroAndUndrainRestoresTheWeightBefore() {
    long lease = keys.grant(60);
    keys.put(key("10.0.0.7:50051"), "10.0.0.7:50051|5", lease);

    Cli.Result drain = cli.run("drain", fixture.service(), "10.0.0.7:50051");
    String drained = keys.value(key("10.0.0.7:50051"));
    Cli.Result undrain = cli.run("undrain", fixture.service(), "10.0.0.7:50051");

    assertThat(drain.exitCode()).as(drain.toString()).isZero();
    assertThat(drain.out()).isEqualTo("10.0.0.7:50051 drained: weight 5 -> 0 (undrain restores 5)\n");
    assertThat(drained).isEqualTo("10.0.0.7:50051|0");
    assertThat(undrain.exitCode()).as(undrain.toString()).isZero();
    assertThat(undrain.out()).isEqualTo("10.0.0.7:50051 weight 0 -> 5\n");
    assertThat(keys.value(key("10.0.0.7:50051"))).isEqualTo("10.0.0.7:50051|5");
    assertThat(keys.get(key("10.0.0.7:50051")).orElseThrow().getLease()).isEqualTo(lease);
  }

  @Test
  void drainRecordsThePreviousWeightOnTheInstancesLease() {
    long lease = keys.grant(60);
    keys.put(key("10.0.0.7:50051"), "10.0.0.7:50051|5", lease);

    cli.run("drain", fixture.service(), "10.0.0.7:50051");

    KeyValue note = keys.get("/services/.drained/" + fixture.service() + "/10.0.0.7:50051").orElseThrow();
    assertThat(Keyspace.text(note.getValue())).isEqualTo("5");
    assertThat(note.getLease()).isEqualTo(lease);
  }

  @Test
  void drainingTwiceKeepsTheFirstRememberedWeight() {
    keys.put(key("10.0.0.7:50051"), "10.0.0.7:50051|5", keys.grant(60));

    cli.run("drain", fixture.service(), "10.0.0.7:50051");
    Cli.Result again = cli.run("drain", fixture.service(), "10.0.0.7:50051");
    cli.run("undrain", fixture.service(), "10.0.0.7:50051");

    assertThat(again.exitCode()).isZero();
    assertThat(again.out()).isEqualTo("10.0.0.7:50051 was already drained (weight 0; undrain restores 5)\n");
    assertThat(keys.value(key("10.0.0.7:50051"))).isEqualTo("10.0.0.7:50051|5");
  }

  @Test
  void undrainWithAWeightUsesIt() {
    keys.put(key("10.0.0.7:50051"), "10.0.0.7:50051|5", keys.grant(60));
    cli.run("drain", fixture.service(), "10.0.0.7:50051");

    Cli.Result r = cli.run("undrain", fixture.service(), "10.0.0.7:50051", "--weight", "3");

    assertThat(r.exitCode()).as(r.toString()).isZero();
    assertThat(keys.value(key("10.0.0.7:50051"))).isEqualTo("10.0.0.7:50051|3");
  }

  @Test
  void undrainOfAnInstanceThatIsNotDrainedChangesNothing() {
    keys.put(key("10.0.0.7:50051"), "10.0.0.7:50051|8", keys.grant(60));
    Keyspace.Snapshot before = keys.snapshot();

    Cli.Result r = cli.run("undrain", fixture.service(), "10.0.0.7:50051");

    assertThat(r.exitCode()).as(r.toString()).isZero();
    assertThat(r.out()).isEqualTo("10.0.0.7:50051 is not drained (weight 8); nothing changed\n");
    assertThat(keys.snapshot()).isEqualTo(before);
  }

  @Test
  void drainOfAnUnregisteredAddressExitsOneAndCreatesNothing() {
    Keyspace.Snapshot before = keys.snapshot();

    Cli.Result drain = cli.run("drain", fixture.service(), "10.0.0.9:1");
    Cli.Result undrain = cli.run("undrain", fixture.service(), "10.0.0.9:1");

    assertThat(drain.exitCode()).isEqualTo(1);
    assertThat(undrain.exitCode()).isEqualTo(1);
    assertThat(keys.snapshot()).isEqualTo(before);
  }
}
