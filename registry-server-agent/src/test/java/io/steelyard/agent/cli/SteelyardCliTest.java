package io.steelyard.agent.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.steelyard.agent.RegistryException;
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
        "deregister", "watch"})
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
    assertThat(err.toString()).contains("\tat io.steelyard.agent.cli.SteelyardCliTest");
  }

  @Test
  void onlyAnEtcdThatDidNotAnswerIsCalledUnreachable() {
    assertThat(SteelyardCli.unreachable(wrap(new java.util.concurrent.TimeoutException()))).isTrue();
    assertThat(SteelyardCli.unreachable(wrap(io.grpc.Status.UNAVAILABLE.asRuntimeException())))
        .isTrue();
    assertThat(SteelyardCli.unreachable(wrap(io.grpc.Status.UNAUTHENTICATED.asRuntimeException())))
        .isFalse();
    assertThat(SteelyardCli.unreachable(wrap(io.grpc.Status.PERMISSION_DENIED.asRuntimeException())))
        .isFalse();
  }

  private static RegistryException wrap(Throwable cause) {
    return new RegistryException(RegistryException.Kind.UNAVAILABLE, "etcd refused list x", cause);
  }

  private static SteelyardCli newCli(StringWriter err) {
    return new SteelyardCli(
        new PrintWriter(new StringWriter(), true),
        new PrintWriter(err, true),
        Map.of(),
        StopSignal.onInterrupt());
  }
}
