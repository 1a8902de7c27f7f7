package io.steelyard.cli;

import static java.util.Objects.requireNonNull;

import io.etcd.jetcd.Client;
import io.steelyard.discovery.ChannelConfigCheck;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.EtcdFailureText;
import io.steelyard.registry.EtcdFlags;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.admin.InstanceStore;
import io.steelyard.registry.admin.ServiceConfigStore;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Callable;
import javax.annotation.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Spec;
import picocli.CommandLine;

/**
 * The {@code steelyard} operator CLI: list, weight, drain/undrain, register (sidecar),
 * deregister, watch, top (a live view with each instance's call rates) and console (the same in
 * a browser) for instances
 * registered in etcd, and config (the service config every client of a service uses).
 *
 * <p>Exit codes ({@link ExitCodes}): 0 success; 1 the operation failed (not registered, etcd
 * unreachable within {@code --timeout}, revision conflict), with a one-line reason on stderr; 2
 * usage error (bad service name, address, weight, unknown
 * option). Every input is validated before etcd is contacted, so bad input never touches etcd.
 *
 * <pre>{@code
 * steelyard --endpoints http://10.0.0.1:2379 weight set greeter 10.0.0.7:50051 8
 * }</pre>
 */
@Command(
    name = "steelyard",
    mixinStandardHelpOptions = true,
    versionProvider = SteelyardCli.Version.class,
    sortOptions = false,
    usageHelpAutoWidth = true,
    description = {
      "Operate the steelyard service registry in etcd: list instances, change",
      "weights, drain, run a registration sidecar, watch changes, see live load.",
      "Global options go before or after the command.",
    },
    footer = {
      "",
      "Exit codes:",
      "  0  success",
      "  1  the operation failed: not registered, etcd unreachable within",
      "     --timeout, revision conflict (one line on stderr)",
      "  2  usage error: bad service name, address, weight or option",
      "",
      "Example:",
      "  steelyard --endpoints http://10.0.0.1:2379 list greeter",
    },
    subcommands = {
      ListCommand.class,
      WeightCommand.class,
      DrainCommand.class,
      UndrainCommand.class,
      RegisterCommand.class,
      DeregisterCommand.class,
      WatchCommand.class,
      TopCommand.class,
      ConsoleCommand.class,
      ConfigCommand.class,
    })
public final class SteelyardCli implements Callable<Integer> {

  @Mixin EtcdFlags etcd = new EtcdFlags();

  @Option(
      names = "--timeout",
      paramLabel = "DURATION",
      scope = ScopeType.INHERIT,
      defaultValue = CliDefaults.TIMEOUT,
      converter = DurationConverter.class,
      description = {
        "How long to wait for etcd per request before",
        "failing with exit 1 (default: ${DEFAULT-VALUE}).",
        "Example: --timeout 500ms, 3s, 2m"
      })
  Duration timeout = Duration.ofSeconds(5);

  @Option(
      names = {"-v", "--verbose"},
      scope = ScopeType.INHERIT,
      description = {"Show stack traces of errors, and library logs.", "Example: steelyard -v list greeter"})
  boolean verbose;

  @Spec CommandSpec spec;

  private final PrintWriter out;
  private final PrintWriter err;
  private final Map<String, String> env;
  private final StopSignal stop;
  private final WriteRunner writeRunner;

  @Nullable private Client client;
  @Nullable private ConnectionSettings settings;

  SteelyardCli(
      PrintWriter out, PrintWriter err, Map<String, String> env, StopSignal stop,
      WriteRunner writeRunner) {
    this.out = requireNonNull(out, "out");
    this.err = requireNonNull(err, "err");
    this.env = requireNonNull(env, "env");
    this.stop = requireNonNull(stop, "stop");
    this.writeRunner = requireNonNull(writeRunner, "writeRunner");
  }

  public static void main(String[] args) {
    configureLogging(args);
    PrintWriter out = new PrintWriter(System.out, true);
    PrintWriter err = new PrintWriter(System.err, true);
    int code = run(out, err, System.getenv(), StopSignal.onSignals(), args);
    out.flush();
    err.flush();
    System.exit(code);
  }

  /**
   * jetcd, gRPC and Netty log at DEBUG/INFO through SLF4J; a CLI's output is for its user, so the
   * CLI's own logback configuration (WARN, to stderr) is used unless the caller chose one. The file
   * has a name of its own so it never configures an application that embeds this module.
   */
  static void configureLogging(String[] args) {
    if (System.getProperty("logback.configurationFile") == null) {
      System.setProperty("logback.configurationFile", "io/steelyard/cli/logback-cli.xml");
    }
    for (String a : args) {
      if (a.equals("-v") || a.equals("--verbose")) {
        System.setProperty("steelyard.log.level", "INFO");
        System.setProperty("steelyard.discovery.log.level", "INFO");
      }
    }
    // grpc (and Vert.x under jetcd) log through java.util.logging, whose console handler would
    // print two-line records of its own format on stderr: route them through SLF4J instead.
    org.slf4j.bridge.SLF4JBridgeHandler.removeHandlersForRootLogger();
    org.slf4j.bridge.SLF4JBridgeHandler.install();
  }

  /**
   * Runs the CLI in-process and returns its exit code. {@code env} stands in for the process
   * environment ({@value EtcdConnection#ENDPOINTS_ENV}). Long-running commands ({@code watch},
   * {@code register}) stop when the calling thread is interrupted.
   */
  static int run(PrintWriter out, PrintWriter err, Map<String, String> env, String... args) {
    return run(out, err, env, StopSignal.onInterrupt(), args);
  }

  static int run(
      PrintWriter out, PrintWriter err, Map<String, String> env, StopSignal stop, String... args) {
    return run(out, err, env, stop, WriteRunner.STORE, args);
  }

  /** {@link #run}, with the write commands carried out by {@code writeRunner}. */
  static int run(
      PrintWriter out, PrintWriter err, Map<String, String> env, StopSignal stop,
      WriteRunner writeRunner, String... args) {
    SteelyardCli cli = new SteelyardCli(out, err, env, stop, writeRunner);
    try {
      return commandLine(cli).execute(args);
    } catch (RuntimeException | LinkageError e) {
      // picocli hands only Exceptions to the execution handler; a broken classpath is an Error.
      return cli.handleFailure(e);
    } finally {
      cli.closeClient();
      out.flush();
      err.flush();
    }
  }

  static CommandLine commandLine(SteelyardCli cli) {
    CommandLine cl = new CommandLine(cli);
    cl.setOut(cli.out);
    cl.setErr(cli.err);
    cl.setCaseInsensitiveEnumValuesAllowed(true);
    // "@file" is an argument of its own (config set SERVICE @file), not picocli's argument file.
    cl.setExpandAtFiles(false);
    cl.setParameterExceptionHandler(cli::handleUsageError);
    cl.setExecutionExceptionHandler((e, commandLine, parseResult) -> cli.handleFailure(e));
    return cl;
  }

  /** {@code steelyard} without a command: print the usage and fail as a usage error. */
  @Override
  public Integer call() {
    throw new ParameterException(spec.commandLine(), "missing command");
  }

  private int handleUsageError(ParameterException e, String[] args) {
    err.println("steelyard: " + EtcdFailureText.oneLine(e.getMessage()));
    if (verbose) {
      e.printStackTrace(err);
    }
    String name = e.getCommandLine().getCommandSpec().qualifiedName();
    err.println("Run '" + name + " --help' for usage.");
    return ExitCodes.USAGE;
  }

  int handleFailure(Throwable e) {
    err.println("steelyard: "
        + EtcdFailureText.describe(e, settings == null ? null : settings.connection().endpointsString()));
    if (verbose) {
      e.printStackTrace(err);
    } else if (!(EtcdFailureText.unwrap(e) instanceof RegistryException)) {
      err.println("(run with --verbose for the stack trace)");
    }
    return ExitCodes.FAILED;
  }

  PrintWriter out() {
    return out;
  }

  PrintWriter err() {
    return err;
  }

  StopSignal stopSignal() {
    return stop;
  }

  Duration timeout() {
    return timeout;
  }

  /**
   * Checks every connection option and the prefix, without contacting etcd. Bad input becomes a
   * usage error (exit 2) of {@code command}.
   */
  ConnectionSettings settings(CommandSpec command) {
    return Usage.check(
        command,
        () -> {
          KeyLayout layout = etcd.layout();
          if (timeout.isZero() || timeout.isNegative()) {
            throw new IllegalArgumentException("timeout: " + timeout + " (expected: > 0)");
          }
          EtcdConnection connection = etcd.connectionBuilder(env).connectTimeout(timeout).build();
          return new ConnectionSettings(connection, layout);
        });
  }

  /** Remembers where etcd is, so an "unreachable" message can say where it looked. */
  void noteConnection(ConnectionSettings settings) {
    this.settings = settings;
  }

  /** A jetcd client for {@code settings}, closed when the CLI returns. */
  Client client(ConnectionSettings settings) {
    this.settings = settings;
    if (client == null) {
      client = settings.connection().connect();
    }
    return client;
  }

  /** The store every read and rewrite goes through (the operator's path every tool shares). */
  InstanceStore store(ConnectionSettings settings) {
    return new InstanceStore(client(settings), settings.layout(), timeout);
  }

  /**
   * The service configs' store, writing only what a channel's own parser accepts ({@link
   * ChannelConfigCheck}).
   */
  ServiceConfigStore configStore(ConnectionSettings settings) {
    return new ServiceConfigStore(client(settings), settings.layout(), timeout, ChannelConfigCheck.create());
  }

  /** How the write commands carry out their write. */
  WriteRunner writeRunner() {
    return writeRunner;
  }

  /**
   * Closes the client without letting a dead etcd hold the CLI past its timeout: jetcd's close
   * shuts down a gRPC channel, which can wait on calls still retrying in the background.
   */
  void closeClient() {
    Client c = client;
    client = null;
    if (c == null) {
      return;
    }
    Thread closer = new Thread(c::close, "steelyard-close");
    closer.setDaemon(true);
    closer.start();
    try {
      closer.join(Math.min(timeout.toMillis(), 2_000));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String v = SteelyardCli.class.getPackage().getImplementationVersion();
      return new String[] {"steelyard " + (v != null ? v : "(development build)")};
    }
  }
}
