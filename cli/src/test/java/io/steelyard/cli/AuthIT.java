package io.steelyard.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.etcd.jetcd.Client;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdAuthAdmin;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code --user} against an etcd with auth enabled, as a registry would run it: a user whose role
 * may read and write under {@code /services/} only (drain notes live there too).
 */
@Timeout(60)
class AuthIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().rootPassword("rootpw").build();

  private static Client root;
  private static Keyspace keys;
  private static Cli cli;

  @BeforeAll
  static void addUsers() throws Exception {
    etcd.authAdmin()
        .addRole("registry", EtcdAuthAdmin.Access.READWRITE, "/services/")
        .addUser("steelyard", "s3cret", "registry");
    root = EtcdConnection.builder().endpoints(etcd.endpoints()).user("root", "rootpw").build().connect();
    keys = new Keyspace(root);
    cli = Cli.withEndpoints(etcd.endpoints());
    keys.put("/services/greeter/10.0.0.7:50051", "10.0.0.7:50051|5", keys.grant(60));
  }

  @AfterAll
  static void disconnect() {
    root.close();
  }

  @Test
  void aUserLimitedToTheRegistryCanListSetDrainAndUndrain() {
    Cli.Result set = cli.run("--user", "steelyard:s3cret", "weight", "set", "greeter", "10.0.0.7:50051", "8");
    Cli.Result drain = cli.run("--user", "steelyard:s3cret", "drain", "greeter", "10.0.0.7:50051");
    Cli.Result list = cli.run("--user", "steelyard:s3cret", "list", "greeter");
    Cli.Result undrain = cli.run("--user", "steelyard:s3cret", "undrain", "greeter", "10.0.0.7:50051");

    assertThat(set.exitCode()).as(set.toString()).isZero();
    assertThat(drain.exitCode()).as(drain.toString()).isZero();
    assertThat(list.exitCode()).as(list.toString()).isZero();
    assertThat(list.out()).contains("0 (drained from 8)");
    assertThat(undrain.exitCode()).as(undrain.toString()).isZero();
    assertThat(keys.value("/services/greeter/10.0.0.7:50051")).isEqualTo("10.0.0.7:50051|8");
  }

  @Test
  void aWrongPasswordFailsWithOneLineThatDoesNotBlameTheNetwork() {
    Cli.Result r = cli.run("--user", "steelyard:wrong", "--timeout", "3s", "list", "greeter");

    assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
    assertThat(r.err().lines().toList()).hasSize(1);
    assertThat(r.err())
        .startsWith("steelyard: etcd at " + etcd.endpoints() + ": ")
        .contains("UNAUTHENTICATED")
        .doesNotContain("unreachable")
        .doesNotContain("wrong");
  }

  @Test
  void noUserFailsWithOneLine() {
    Cli.Result r = cli.run("--timeout", "3s", "weight", "get", "greeter", "10.0.0.7:50051");

    assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
    assertThat(r.err().lines().toList()).hasSize(1);
    assertThat(r.err()).contains("user name is empty");
  }

  @Test
  void watchWithAWrongPasswordStopsAtTheRefusalInsteadOfWaitingForEtcd() {
    Cli.Result r = cli.run("--user", "steelyard:wrong", "--timeout", "20s", "watch", "greeter");

    assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
    assertThat(r.err().lines().toList()).as(r.toString()).hasSize(1);
    assertThat(r.err())
        .startsWith("steelyard: etcd at " + etcd.endpoints() + ": ")
        .contains("UNAUTHENTICATED")
        .doesNotContain("unreachable")
        .doesNotContain("within");
    assertThat(r.out()).isEmpty();
    assertThat(r.took()).isLessThan(Duration.ofSeconds(20));
  }

  @Test
  void watchOutsideTheUsersKeysIsRefusedAsAPermission() {
    Cli.Result r =
        cli.run("--user", "steelyard:s3cret", "--timeout", "20s", "--prefix", "/other", "watch", "greeter");

    assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
    assertThat(r.err().lines().toList()).as(r.toString()).hasSize(1);
    assertThat(r.err())
        .startsWith("steelyard: etcd at " + etcd.endpoints() + ": ")
        .containsIgnoringCase("permission denied")
        .doesNotContain("unreachable");
    assertThat(r.took()).isLessThan(Duration.ofSeconds(20));
  }
}
