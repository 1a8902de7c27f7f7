package io.steelyard.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.auth.Permission;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
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

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private static Client root;
  private static Keyspace keys;
  private static Cli cli;

  @BeforeAll
  static void enableAuth() throws Exception {
    try (Client admin = EtcdConnection.of(etcd.endpoints()).connect()) {
      var auth = admin.getAuthClient();
      auth.userAdd(bytes("root"), bytes("rootpw")).get(10, TimeUnit.SECONDS);
      auth.roleAdd(bytes("root")).get(10, TimeUnit.SECONDS);
      auth.userGrantRole(bytes("root"), bytes("root")).get(10, TimeUnit.SECONDS);
      auth.userAdd(bytes("steelyard"), bytes("s3cret")).get(10, TimeUnit.SECONDS);
      auth.roleAdd(bytes("registry")).get(10, TimeUnit.SECONDS);
      auth.roleGrantPermission(
              bytes("registry"), bytes("/services/"), bytes("/services0"), Permission.Type.READWRITE)
          .get(10, TimeUnit.SECONDS);
      auth.userGrantRole(bytes("steelyard"), bytes("registry")).get(10, TimeUnit.SECONDS);
      auth.authEnable().get(10, TimeUnit.SECONDS);
    }
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

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
