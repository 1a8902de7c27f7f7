package io.steelyard.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.steelyard.registry.RegistryException;
import io.steelyard.registry.internal.EtcdErrors;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The CLI without etcd: help, usage errors and the mapping of failures to exit codes. etcd is
 * "at" a port nobody listens on, so a test that reached etcd would fail slowly, not pass.
 */
@Timeout(30)
class SteelyardCliTest {

  private static final Cli cli = Cli.withEndpoints("http://127.0.0.1:9");

  @ParameterizedTest
  @ValueSource(
      strings = {"", "list", "weight", "weight get", "weight set", "drain", "undrain", "register",
        "deregister", "watch", "top", "console"})
  void everyCommandHasHelpWithAnExample(String command) {
    String[] args = (command.isEmpty() ? "--help" : command + " --help").split(" ");

    Cli.Result r = cli.run(args);

    assertThat(r.exitCode()).as(r.toString()).isZero();
    assertThat(r.out()).contains("Usage: steelyard").contains("Example");
    assertThat(r.err()).isEmpty();
  }

  @Test
  void noCommandIsAUsageError() {
    Cli.Result r = cli.run();

    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).startsWith("steelyard: missing command\n");
  }

  @Test
  void unknownOptionIsAUsageErrorWithOneLineAndAHint() {
    Cli.Result r = cli.run("list", "greeter", "--bogus");

    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err().lines().toList())
        .containsExactly(
            "steelyard: Unknown option: '--bogus'", "Run 'steelyard list --help' for usage.");
    assertThat(r.out()).isEmpty();
  }

  @Test
  void unknownCommandIsAUsageError() {
    Cli.Result r = cli.run("frobnicate");

    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).startsWith("steelyard: ");
  }

  @Test
  void nonNumericWeightIsAUsageError() {
    Cli.Result r = cli.run("weight", "set", "greeter", "10.0.0.7:50051", "lots");

    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).contains("'lots'");
  }

  @Test
  void badDurationIsAUsageError() {
    Cli.Result r = cli.run("--timeout", "soon", "list", "greeter");

    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).startsWith("steelyard: ").contains("'soon' is not a duration");
  }

  @Test
  void badEndpointsAreAUsageError() {
    Cli.Result r = cli.run("--endpoints", "ftp://x", "list", "greeter");

    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).startsWith("steelyard: endpoints: 'ftp://x'");
  }

  @Test
  void badPrefixIsAUsageError() {
    Cli.Result r = cli.run("--prefix", "/../x", "list", "greeter");

    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).startsWith("steelyard: prefix: '/../x'");
  }

  @Test
  void clientCertWithoutCaIsAUsageError() {
    Cli.Result r = cli.run("--cert", "c.pem", "--key", "k.pem", "list", "greeter");

    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).startsWith("steelyard: tls: --cert and --key need --cacert");
  }

  @Test
  void userWithoutPasswordIsAUsageErrorThatDoesNotEchoIt() {
    Cli.Result r = cli.run("--user", "secretonly", "list", "greeter");

    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).startsWith("steelyard: user: expected USER:PASSWORD").doesNotContain("secretonly");
  }

  @Test
  void metadataWithPipeFormatIsAUsageError() {
    Cli.Result r =
        cli.run("register", "greeter", "10.0.0.7:50051", "--format", "pipe", "--meta", "zone=a");

    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).contains("pipe format cannot carry metadata");
  }

  @Test
  void ttlBelowTwoSecondsIsAUsageError() {
    Cli.Result r = cli.run("register", "greeter", "10.0.0.7:50051", "--ttl", "1s");

    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.err()).startsWith("steelyard: ttl: PT1S (expected: >= 2s)");
  }

  @Test
  void usageErrorsNeverTryEtcd() {
    // With etcd unreachable, anything that tried it would take the 5s default timeout.
    Cli.Result r = cli.run("weight", "set", "../x", "10.0.0.7:50051", "3");

    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.took()).isLessThan(Duration.ofSeconds(3));
  }

  @Test
  void endpointsComeFromTheEnvironmentUnlessGiven() {
    Cli.Result fromEnv = Cli.withEndpoints("http://127.0.0.1:9").run("--timeout", "300ms", "list", "x");
    Cli.Result given =
        Cli.withEndpoints("http://127.0.0.1:9")
            .run("--endpoints", "http://127.0.0.1:7", "--timeout", "300ms", "list", "x");

    assertThat(fromEnv.err()).contains("etcd unreachable at http://127.0.0.1:9:");
    assertThat(given.err()).contains("etcd unreachable at http://127.0.0.1:7:");
  }

  @Test
  void registryFailuresExitOneWithOneLineAndNoStackTrace() {
    StringWriter err = new StringWriter();
    SteelyardCli steelyard = newCli(err);

    int code =
        steelyard.handleFailure(
            new RegistryException(
                RegistryException.Kind.CONFLICT,
                "key changed since it was read",
                new RuntimeException("cause")));

    assertThat(code).isEqualTo(1);
    assertThat(err.toString()).isEqualTo("steelyard: key changed since it was read\n");
  }

  @Test
  void unexpectedErrorsExitOneWithOneLineAndAHint() {
    StringWriter err = new StringWriter();
    SteelyardCli steelyard = newCli(err);

    int code = steelyard.handleFailure(new IllegalStateException("boom\nsecond line"));

    assertThat(code).isEqualTo(1);
    assertThat(err.toString().lines().toList())
        .containsExactly(
            "steelyard: unexpected error: java.lang.IllegalStateException: boom second line",
            "(run with --verbose for the stack trace)");
  }

  @Test
  void verboseShowsTheStackTrace() {
    StringWriter err = new StringWriter();
    SteelyardCli steelyard = newCli(err);
    steelyard.verbose = true;

    int code = steelyard.handleFailure(new IllegalStateException("boom"));

    assertThat(code).isEqualTo(1);
    assertThat(err.toString()).contains("\tat io.steelyard.cli.SteelyardCliTest");
  }

  @Test
  void onlyAnEtcdThatDidNotAnswerIsCalledUnreachable() {
    String at = "http://127.0.0.1:9";

    assertThat(failureLine(new java.util.concurrent.TimeoutException()))
        .startsWith("steelyard: etcd unreachable at " + at + ": etcd did not answer list x");
    assertThat(failureLine(io.grpc.Status.UNAVAILABLE.asRuntimeException()))
        .startsWith("steelyard: etcd unreachable at " + at + ": ");
    assertThat(failureLine(io.grpc.Status.UNAUTHENTICATED.asRuntimeException()))
        .startsWith("steelyard: etcd at " + at + ": etcd refused list x: authentication failed");
    assertThat(failureLine(io.grpc.Status.PERMISSION_DENIED.asRuntimeException()))
        .startsWith("steelyard: etcd at " + at + ": etcd refused list x: permission denied");
    assertThat(failureLine(new javax.net.ssl.SSLHandshakeException("PKIX path building failed")))
        .startsWith("steelyard: etcd at " + at + ": etcd refused list x: TLS");
  }

  @Test
  void aConflictNamesNoEtcdEndpoint() {
    StringWriter err = new StringWriter();
    SteelyardCli steelyard = newCliAtPort9(err);

    steelyard.handleFailure(
        new RegistryException(RegistryException.Kind.CONFLICT, "key changed since it was read", null));

    assertThat(err.toString()).isEqualTo("steelyard: key changed since it was read\n");
  }

  /** The stderr line for an etcd call "list x" that failed with {@code cause}. */
  private static String failureLine(Throwable cause) {
    StringWriter err = new StringWriter();
    SteelyardCli steelyard = newCliAtPort9(err);

    int code = steelyard.handleFailure(EtcdErrors.toRegistryException("list x", cause));

    assertThat(code).isEqualTo(1);
    assertThat(err.toString().lines()).hasSize(1);
    return err.toString().strip();
  }

  /** A CLI that has "connected" to etcd at http://127.0.0.1:9, so failures name it. */
  private static SteelyardCli newCliAtPort9(StringWriter err) {
    SteelyardCli steelyard = newCli(err);
    steelyard.noteConnection(
        new ConnectionSettings(
            io.steelyard.registry.EtcdConnection.of("http://127.0.0.1:9"),
            io.steelyard.registry.KeyLayout.defaults()));
    return steelyard;
  }

  private static SteelyardCli newCli(StringWriter err) {
    return new SteelyardCli(
        new PrintWriter(new StringWriter(), true),
        new PrintWriter(err, true),
        Map.of(),
        StopSignal.onInterrupt(),
        WriteRunner.STORE);
  }
}
