package io.steelyard.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.TestCertificates;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every binary against etcd with mutual TLS and auth, with the flags of docs/security.md and its
 * least-privilege user: greeter servers register, greeter-client calls them, the CLI lists,
 * sets a weight and watches.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class SecureBinariesIT {

  private static final TestCertificates certs = TestCertificates.generate();

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().mutualTls(certs).rootPassword("rootpw").build();

  @TempDir Path dir;

  @BeforeAll
  static void users() {
    Children.addSteelyardUsers(etcd);
  }


  @Test
  void serversClientAndCliWorkOverMutualTlsWithTheirRoles() throws Exception {
    try (Children children = new Children(dir, etcd, certs)) {
      String a = children.server("greeter", 1).address();
      String b = children.server("greeter", 3).address();
      Children.Child watch = children.start(Children.CLI, "operator:operatorpw", "watch", "greeter");

      Children.Child list = children.run(Children.CLI, "operator:operatorpw", "list", "greeter");
      assertThat(list.exitCode()).as(list.describe()).isZero();
      assertThat(list.out()).contains(a).contains(b);

      Children.Child set = children.run(Children.CLI, "operator:operatorpw", "weight", "set", "greeter", b, "4");
      assertThat(set.exitCode()).as(set.describe()).isZero();
      await().atMost(Duration.ofSeconds(20)).until(() -> watch.out().contains("weight " + b + " 3 -> 4"));

      Children.Child client = children.run(Children.CLIENT, "caller:callerpw",
          "--service", "greeter", "--requests", "400", "--warmup", "10s");
      assertThat(client.exitCode()).as(client.describe()).isZero();
      assertThat(client.out()).contains(a).contains(b).contains("400 ok");
    }
  }

  @Test
  void theCliBinaryPrintsExactlyOneLineForARefusalAndForAnOutage() throws Exception {
    try (Children children = new Children(dir, etcd, certs)) {
      Children.Child wrong = children.run(Children.CLI, "operator:wrongpw", "list", "greeter");
      assertThat(wrong.exitCode()).as(wrong.describe()).isEqualTo(1);
      assertThat(wrong.err().lines().toList()).as(wrong.describe()).singleElement()
          .satisfies(line -> assertThat(line).startsWith("steelyard: etcd at ").contains("authentication failed"));
    }
    Cli.Result down = Cli.run("http://127.0.0.1:1", "--timeout", "2s", "list", "greeter");
    assertThat(down.exitCode()).as(down.stderr()).isEqualTo(1);
    assertThat(down.stderr().lines().toList()).as(down.stderr()).singleElement()
        .satisfies(line -> assertThat(line).startsWith("steelyard: etcd unreachable at http://127.0.0.1:1: "));
  }
}
