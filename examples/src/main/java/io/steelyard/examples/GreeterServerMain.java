package io.steelyard.examples;

import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.EtcdFlags;
import io.steelyard.registry.Localities;
import io.steelyard.registry.ValueCodec;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code bin/greeter-server}: serves the greeter, registers it, prints one {@code READY ...} line
 * when serving, and shuts down gracefully on SIGTERM/SIGINT.
 */
@Command(
    name = "greeter-server",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Serves Greeter/SayHello and grpc.health.v1, registers HOST:PORT|WEIGHT in etcd through the"
          + " embedded agent, and prints 'READY address=HOST:PORT service=NAME weight=W' once"
          + " serving. SIGTERM or Ctrl-C shuts down gracefully: health NOT_SERVING, deregister,"
          + " drain delay, stop, grace period.",
    },
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
      "1:could not start or register",
      "2:usage error",
      "143:stopped by SIGTERM (130: SIGINT), after the graceful shutdown"
    })
final class GreeterServerMain implements Callable<Integer> {

  @Spec CommandSpec spec;

  @Mixin EtcdFlags etcd = new EtcdFlags();

  @Option(names = "--service", paramLabel = "NAME", description = "service name (default: ${DEFAULT-VALUE})")
  String service = "greeter";

  @Option(names = "--host", paramLabel = "HOST",
      description = "host to listen on and advertise (default: ${DEFAULT-VALUE})")
  String host = GreeterServer.DEFAULT_HOST;

  @Option(names = "--port", paramLabel = "P", description = "port; 0 = any free port (default: ${DEFAULT-VALUE})")
  int port = 0;

  @Option(names = "--weight", paramLabel = "W", description = "weight 0..1000000 (default: ${DEFAULT-VALUE})")
  int weight = 1;

  @Option(names = "--zone", paramLabel = "ZONE",
      description = "zone to register in (metadata zone=ZONE, read by zone-aware callers; default: none)")
  String zone;

  @Option(names = "--meta", paramLabel = "KEY=VALUE",
      description = "metadata to register, repeatable, e.g. --meta version=v2 (read by selectors and"
          + " splits; default: none)")
  Map<String, String> meta = new LinkedHashMap<>();

  @Option(names = "--fail-percent", paramLabel = "P",
      description = "fail P % of the calls (0..100) with UNAVAILABLE, evenly spread: for outlier"
          + " detection (default: ${DEFAULT-VALUE})")
  int failPercent = 0;

  @Option(names = "--delay", paramLabel = "DURATION", converter = Durations.class,
      description = "answer every call this late, e.g. 1s: for timeouts (default: 0ms)")
  Duration delay = Duration.ZERO;

  @Option(names = "--register", paramLabel = "true|false", arity = "1",
      description = "register in etcd; false = serve only, e.g. behind 'steelyard register' (default: ${DEFAULT-VALUE})")
  boolean register = true;

  @Option(names = "--ttl", paramLabel = "DURATION", converter = Durations.class,
      description = "lease TTL (default: 10s)")
  Duration ttl = Duration.ofSeconds(GreeterServer.DEFAULT_TTL_SECONDS);

  @Option(names = "--drain-delay", paramLabel = "DURATION", converter = Durations.class,
      description = "wait between deregistering and refusing calls (default: 1s)")
  Duration drainDelay = Duration.ofMillis(GreeterServer.DEFAULT_DRAIN_DELAY_MILLIS);

  @Option(names = "--grace", paramLabel = "DURATION", converter = Durations.class,
      description = "wait for calls in flight before cancelling them (default: 5s)")
  Duration grace = Duration.ofMillis(GreeterServer.DEFAULT_GRACE_MILLIS);

  @Option(names = "--metrics-port", paramLabel = "P",
      description = "serve Prometheus metrics at http://HOST:P/metrics (0 = any free port), print"
          + " 'METRICS url=...' and advertise the URL in the registration (default: no metrics)")
  Integer metricsPort;

  @Override
  public Integer call() throws InterruptedException {
    GreeterServer.Builder b;
    try {
      b =
          GreeterServer.builder()
              .connection(etcd.connection())
              .layout(etcd.layout())
              .service(service)
              .host(host)
              .port(port)
              .weight(weight)
              .register(register)
              .ttl(ttl)
              .drainDelay(drainDelay)
              .grace(grace)
              .metadata(checkedMeta())
              .faults(faults());
      if (metricsPort != null) {
        b.metricsPort(metricsPort);
      }
      if (zone != null) {
        b.zone(zone);
      }
    } catch (IllegalArgumentException e) {
      spec.commandLine().getErr().println("greeter-server: " + e.getMessage());
      spec.commandLine().getErr().flush();
      return 2;
    }
    GreeterServer server = b.build();
    try {
      server.start();
    } catch (RuntimeException e) {
      System.err.println("greeter-server: " + e.getMessage());
      return 1;
    }
    Thread hook = new Thread(server::close, "greeter-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    if (server.metricsUrl() != null) {
      System.out.printf("METRICS url=%s%n", server.metricsUrl());
    }
    System.out.printf("READY address=%s service=%s weight=%d%s%n", server.address(), service, weight,
        zone == null ? "" : " zone=" + zone);
    System.out.flush();
    server.awaitTermination();
    return 0;
  }

  /** The {@code --meta} pairs: keys and values non-empty, {@code weight} not among them. */
  private Map<String, String> checkedMeta() {
    for (Map.Entry<String, String> kv : meta.entrySet()) {
      if (kv.getKey().isBlank() || kv.getValue().isBlank()) {
        throw new IllegalArgumentException("--meta: '" + kv.getKey() + "=" + kv.getValue()
            + "' (expected: KEY=VALUE, both non-empty)");
      }
    }
    if (meta.containsKey(ValueCodec.WEIGHT_METADATA_KEY)) {
      throw new IllegalArgumentException("--meta: weight (expected: --weight W)");
    }
    Localities.withLocality(meta, zone, null); // refuses --zone beside another --meta zone=
    return meta;
  }

  private GreeterFaults faults() {
    if (failPercent < 0 || failPercent > 100) {
      throw new IllegalArgumentException("--fail-percent: " + failPercent + " (expected: 0..100)");
    }
    return new GreeterFaults(failPercent, delay);
  }

  /** The command, with a usage error reported in one line on its error stream (exit 2). */
  static CommandLine commandLine() {
    CommandLine cli = new CommandLine(new GreeterServerMain());
    cli.setParameterExceptionHandler(
        (ex, a) -> {
          ex.getCommandLine().getErr().println(
              "greeter-server: " + ex.getMessage() + " (see greeter-server --help)");
          ex.getCommandLine().getErr().flush();
          return 2;
        });
    return cli;
  }

  public static void main(String[] args) {
    Logging.routeJulToSlf4j();
    int code = commandLine().execute(args);
    if (code != 0) {
      System.exit(code);
    }
  }
}
