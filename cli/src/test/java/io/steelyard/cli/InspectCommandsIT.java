package io.steelyard.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@code list}, {@code deregister} and {@code watch} against a real etcd. */
@Timeout(60)
class InspectCommandsIT {

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
  void listShowsAddressWeightLeaseTtlFormatAndMetadata() {
    long lease = keys.grant(60);
    keys.put(key("10.0.0.7:50051"), "10.0.0.7:50051|5", lease);
    keys.put(
        key("10.0.0.8:50051"),
        "{\"Op\":0,\"Addr\":\"10.0.0.8:50051\",\"Metadata\":{\"weight\":2,\"zone\":\"a\"}}",
        lease);
    keys.put(key("10.0.0.9:50051"), "10.0.0.9:50051");

    Cli.Result r = cli.run("list", fixture.service());

    assertThat(r.exitCode()).as(r.toString()).isZero();
    String hex = Long.toHexString(lease);
    assertThat(r.out().lines().toList())
        .hasSize(4)
        .satisfies(l -> assertThat(l.get(0)).matches("ADDRESS +WEIGHT +LEASE +TTL +FORMAT +METADATA"))
        .satisfies(l -> assertThat(l.get(1)).matches("10\\.0\\.0\\.7:50051 +5 +" + hex + " +[56][0-9]s +pipe +-"))
        .satisfies(l -> assertThat(l.get(2)).matches("10\\.0\\.0\\.8:50051 +2 +" + hex + " +[56][0-9]s +json +zone=a"))
        .satisfies(l -> assertThat(l.get(3)).matches("10\\.0\\.0\\.9:50051 +1 +none +- +plain +-"));
    assertThat(r.err()).isEmpty();
  }

  @Test
  void listShowsMalformedEntriesWithTheirReason() {
    keys.put(key("10.0.0.7:50051"), "10.0.0.7:50051|5");
    keys.put(key("broken"), "10.0.0.8:50051|heavy");

    Cli.Result r = cli.run("list", fixture.service());

    assertThat(r.exitCode()).as(r.toString()).isZero();
    assertThat(r.out().lines().toList().get(2))
        .matches("broken +- +none +- +malformed +pipe value: weight 'heavy' \\(expected: .*\\)");
  }

  @Test
  void listShowsADrainedInstanceWithTheWeightItHadBefore() {
    keys.put(key("10.0.0.7:50051"), "10.0.0.7:50051|5", keys.grant(60));
    cli.run("drain", fixture.service(), "10.0.0.7:50051");

    Cli.Result r = cli.run("list", fixture.service());

    assertThat(r.out().lines().toList().get(1)).contains(" 0 (drained from 5) ");
  }

  @Test
  void listAsJson() {
    long lease = keys.grant(60);
    keys.put(
        key("10.0.0.8:50051"),
        "{\"Op\":0,\"Addr\":\"10.0.0.8:50051\",\"Metadata\":{\"weight\":2,\"zone\":\"a\"}}",
        lease);
    keys.put(key("broken"), "x|y");

    Cli.Result r = cli.run("list", fixture.service(), "--output", "json");

    assertThat(r.exitCode()).as(r.toString()).isZero();
    assertThat(r.out())
        .startsWith("{\"service\":\"" + fixture.service() + "\",\"instances\":[\n")
        .contains(
            "{\"key\":\"" + key("10.0.0.8:50051") + "\",\"address\":\"10.0.0.8:50051\",\"weight\":2,"
                + "\"leaseId\":" + lease + ",\"ttlSeconds\":")
        .contains("\"format\":\"json\",\"metadata\":{\"zone\":\"a\"}}")
        .contains(
            "{\"key\":\"" + key("broken") + "\",\"malformed\":true,\"reason\":\"pipe value: bad"
                + " address 'x'\",\"leaseId\":0,\"ttlSeconds\":-1}")
        .endsWith("\n]}\n");
  }

  @Test
  void listOfAServiceWithoutInstancesSaysSo() {
    Cli.Result table = cli.run("list", fixture.service());
    Cli.Result json = cli.run("list", fixture.service(), "-o", "json");

    assertThat(table.exitCode()).isZero();
    assertThat(table.out()).isEqualTo("no instances of " + fixture.service() + "\n");
    assertThat(json.out()).isEqualTo("{\"service\":\"" + fixture.service() + "\",\"instances\":[]}\n");
  }

  @Test
  void listNeverShowsAnotherServiceWhoseNameStartsTheSame() {
    keys.put("/services/" + fixture.service() + "2/10.0.0.7:50051", "10.0.0.7:50051|5");

    Cli.Result r = cli.run("list", fixture.service());

    assertThat(r.out()).isEqualTo("no instances of " + fixture.service() + "\n");
  }

  @Test
  void listUnderAnotherPrefix() {
    keys.put("/registry/" + fixture.service() + "/10.0.0.7:50051", "10.0.0.7:50051|5");

    Cli.Result r = cli.run("--prefix", "/registry", "list", fixture.service());

    assertThat(r.out()).contains("10.0.0.7:50051  5");
  }

  @Test
  void deregisterDeletesTheKey() {
    keys.put(key("10.0.0.7:50051"), "10.0.0.7:50051|5", keys.grant(60));

    Cli.Result r = cli.run("deregister", fixture.service(), "10.0.0.7:50051");

    assertThat(r.exitCode()).as(r.toString()).isZero();
    assertThat(r.out()).isEqualTo("deleted " + key("10.0.0.7:50051") + "\n");
    assertThat(keys.get(key("10.0.0.7:50051"))).isEmpty();
  }

  @Test
  void deregisterOfAnUnregisteredAddressExitsOne() {
    Keyspace.Snapshot before = keys.snapshot();

    Cli.Result r = cli.run("deregister", fixture.service(), "10.0.0.9:1");

    assertThat(r.exitCode()).isEqualTo(1);
    assertThat(r.err()).startsWith("steelyard: 10.0.0.9:1 is not registered under " + fixture.service());
    assertThat(keys.snapshot()).isEqualTo(before);
  }

  @Test
  void watchPrintsOneLinePerChange() {
    keys.put(key("10.0.0.7:50051"), "10.0.0.7:50051|5");
    Cli.Running watch = cli.start("watch", fixture.service(), "--count", "5");
    await().atMost(Duration.ofSeconds(10)).until(() -> watch.err().contains("watching "));

    keys.put(key("10.0.0.8:50051"), "10.0.0.8:50051|2");
    keys.put(key("10.0.0.7:50051"), "10.0.0.7:50051|8");
    keys.put(key("10.0.0.7:50051"), "10.0.0.7:50051|8"); // same value again: no line
    keys.put(key("bad"), "nonsense|");
    keys.put(
        key("10.0.0.8:50051"),
        "{\"Op\":0,\"Addr\":\"10.0.0.8:50051\",\"Metadata\":{\"weight\":2,\"zone\":\"b\"}}");
    keys.delete(key("10.0.0.7:50051"));
    Cli.Result r = watch.result(Duration.ofSeconds(10));

    assertThat(r.exitCode()).as(r.toString()).isZero();
    assertThat(r.out().lines().toList())
        .containsExactly(
            "present 10.0.0.7:50051 weight=5",
            "added 10.0.0.8:50051 weight=2",
            "weight 10.0.0.7:50051 5 -> 8",
            "malformed " + key("bad") + ": pipe value: bad address 'nonsense'",
            "updated 10.0.0.8:50051 weight=2 zone=b",
            "removed 10.0.0.7:50051");
  }

  @Test
  void watchSeesAKeyExpireWithItsLease() {
    long lease = keys.grant(2);
    keys.put(key("10.0.0.7:50051"), "10.0.0.7:50051|5", lease);
    Cli.Running watch = cli.start("watch", fixture.service(), "--count", "1");
    await().atMost(Duration.ofSeconds(10)).until(() -> watch.err().contains("watching "));

    Cli.Result r = watch.result(Duration.ofSeconds(15));

    assertThat(r.out().lines().toList())
        .containsExactly("present 10.0.0.7:50051 weight=5", "removed 10.0.0.7:50051");
  }

  @Test
  void watchRunsUntilInterruptedThenExitsZero() {
    Cli.Running watch = cli.start("watch", fixture.service());
    await().atMost(Duration.ofSeconds(10)).until(() -> watch.err().contains("watching "));
    keys.put(key("10.0.0.7:50051"), "10.0.0.7:50051|5");
    await().atMost(Duration.ofSeconds(10)).until(() -> watch.out().contains("added 10.0.0.7:50051"));

    watch.interrupt();
    Cli.Result r = watch.result(Duration.ofSeconds(10));

    assertThat(r.exitCode()).as(r.toString()).isZero();
    assertThat(r.out()).isEqualTo("added 10.0.0.7:50051 weight=5\n");
  }
}
