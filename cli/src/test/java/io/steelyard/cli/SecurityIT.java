package io.steelyard.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.steelyard.testkit.EtcdAuthAdmin;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.TestCertificates;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The CLI against etcd with mutual TLS and auth: it works with the operator's flags, and each
 * misconfiguration fails with exit 1 and one line naming the problem within 3 s (with a 10 s
 * {@code --timeout}), never "etcd unreachable".
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SecurityIT {

  private static final TestCertificates certs = TestCertificates.generate();

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().mutualTls(certs).rootPassword("rootpw").build();

  private static final Duration BOUND = Duration.ofSeconds(3);


  @BeforeAll
  static void rolesAndAWarmJvm() {
    etcd.authAdmin()
        .addRole("steelyard-operator", EtcdAuthAdmin.Access.READWRITE, "/services/")
        .addRole("steelyard-server-greeter", EtcdAuthAdmin.Access.READWRITE, "/services/greeter/", "/services/.drained/greeter/")
        .addUser("operator", "operatorpw", "steelyard-operator")
        .addUser("greeter", "greeterpw", "steelyard-server-greeter");
    // The bound is about naming the problem, not about loading TLS classes.
    cli(certs.clientCert(), certs.clientKey(), "operator:operatorpw", "list", "greeter");
  }

  private static Cli.Result cli(Path cert, Path key, String user, String... command) {
    List<String> args = new ArrayList<>(List.of("--cacert", certs.caCert().toString()));
    if (cert != null) {
      args.addAll(List.of("--cert", cert.toString(), "--key", key.toString()));
    }
    if (user != null) {
      args.addAll(List.of("--user", user));
    }
    args.addAll(List.of("--timeout", "10s"));
    args.addAll(List.of(command));
    return Cli.withEndpoints(etcd.endpoints()).run(args.toArray(String[]::new));
  }

  @Test
  void theOperatorListsAndDeregistersOverMutualTls() {
    Cli.Result list = cli(certs.clientCert(), certs.clientKey(), "operator:operatorpw", "list", "greeter", "--output", "json");
    assertThat(list.exitCode()).as(list.toString()).isZero();
    assertThat(list.out()).contains("\"instances\":[]");
    Cli.Result register = Cli.withEndpoints(etcd.endpoints()).run(
        "--cacert", certs.caCert().toString(), "--cert", certs.clientCert().toString(),
        "--key", certs.clientKey().toString(), "--user", "operator:operatorpw",
        "deregister", "greeter", "10.0.0.7:50051");
    assertThat(register.exitCode()).as(register.toString()).isEqualTo(1); // reached etcd: not registered
    assertThat(register.err()).contains("not registered").doesNotContain("refused");
  }

  @Test
  void noClientCertificate() {
    assertRefused(cli(null, null, "operator:operatorpw", "list", "greeter"), "etcd rejected the client certificate");
  }

  @Test
  void expiredClientCertificate() {
    assertRefused(cli(certs.expiredClientCert(), certs.expiredClientKey(), "operator:operatorpw", "list", "greeter"),
        "etcd refused the client certificate " + certs.expiredClientCert() + " (not after ");
  }

  @Test
  void plainTextAgainstTheTlsPort() {
    String http = etcd.endpoints().replace("https://", "http://");
    Cli.Result r = Cli.withEndpoints(http).run("--user", "operator:operatorpw", "--timeout", "10s", "list", "greeter");
    assertRefused(r, http + " is a TLS port: use https://");
  }

  @Test
  void wrongPassword() {
    Cli.Result r = cli(certs.clientCert(), certs.clientKey(), "operator:hunter2", "list", "greeter");
    assertRefused(r, "authentication failed");
    assertThat(r.err()).doesNotContain("hunter2");
  }

  @Test
  void registeringAnotherServiceIsPermissionDeniedNotUnreachable() {
    Cli.Result r = cli(certs.clientCert(), certs.clientKey(), "greeter:greeterpw", "register", "othersvc", "10.0.0.7:50051");
    assertRefused(r, "permission denied");
    assertThat(r.err()).contains("/services/othersvc/10.0.0.7:50051");
  }

  private static void assertRefused(Cli.Result r, String problem) {
    assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
    assertThat(r.err().lines().toList()).as(r.toString()).hasSize(1);
    assertThat(r.err())
        .startsWith("steelyard: etcd at ")
        .contains(problem)
        .doesNotContain("unreachable")
        .doesNotContain("did not answer");
    assertThat(r.took()).as(r.toString()).isLessThan(BOUND);
  }
}
