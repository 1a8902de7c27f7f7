package io.steelyard.examples;

import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.EtcdFlags;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

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
              .grace(grace);
      if (metricsPort != null) {
        b.metricsPort(metricsPort);
      }
      if (zone != null) {
        b.zone(zone);
      }
    } catch (IllegalArgumentException e) {
      System.err.println("greeter-server: " + e.getMessage());
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

  public static void main(String[] args) {
    Logging.routeJulToSlf4j();
    CommandLine cli = new CommandLine(new GreeterServerMain());
    cli.setParameterExceptionHandler(
        (ex, a) -> {
          System.err.println("greeter-server: " + ex.getMessage());
          System.err.println("Try 'greeter-server --help'.");
          return 2;
        });
    int code = cli.execute(args);
    if (code != 0) {
      System.exit(code);
    }
  }
}
