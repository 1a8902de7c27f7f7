package io.steelyard.xds;

import com.google.common.base.Splitter;
import com.google.common.net.HostAndPort;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.EtcdFlags;
import io.steelyard.registry.MetricsEndpoint;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import javax.annotation.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code bin/steelyard-xds}: the xDS control plane as a process. Prints {@code READY
 * xds=HOST:PORT} on stdout once it listens; SIGTERM or SIGINT stops it. Bad options exit 2.
 */
@Command(
    name = "steelyard-xds",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = "Serves the registry over xDS (ADS: LDS, CDS, EDS) to gRPC clients and Envoy.")
public final class XdsMain implements Callable<Integer> {

  @Mixin EtcdFlags etcd = new EtcdFlags();

  @Option(names = "--services", paramLabel = "a,b|all", defaultValue = "all",
      description = "Services to serve, comma-separated, or all (default: ${DEFAULT-VALUE}).")
  String services = "all";

  @Option(names = "--host", paramLabel = "HOST", defaultValue = XdsServer.DEFAULT_HOST,
      description = {"Address to listen on (default: ${DEFAULT-VALUE}). Plaintext beyond loopback needs",
          "--insecure-listen; with --tls-cert (and no --tls-listen) this address serves TLS."})
  String host = XdsServer.DEFAULT_HOST;

  @Option(names = "--port", paramLabel = "PORT", defaultValue = "" + XdsServer.DEFAULT_PORT,
      description = "xDS port, 0 for any free port (default: ${DEFAULT-VALUE}).")
  int port = XdsServer.DEFAULT_PORT;

  @Option(names = "--tls-cert", paramLabel = "FILE",
      description = "Serve xDS over TLS with this certificate chain (needs --tls-key); read again when it changes.")
  @Nullable Path tlsCert;

  @Option(names = "--tls-key", paramLabel = "FILE", description = "Private key for --tls-cert.")
  @Nullable Path tlsKey;

  @Option(names = "--tls-client-ca", paramLabel = "FILE",
      description = {"Mutual TLS: every client presents a certificate signed by this CA.",
          "The CA, --tls-cert and --tls-key are read again when they change."})
  @Nullable Path tlsClientCa;

  @Option(names = "--tls-listen", paramLabel = "HOST:PORT",
      description = {"Serve TLS here instead, and plaintext on --host/--port beside it",
          "(loopback, for local clients without TLS support)."})
  @Nullable String tlsListen;

  @Option(names = "--insecure-listen",
      description = "Allow plaintext on an address beyond loopback (logged at WARN).")
  boolean insecureListen;

  @Option(names = "--authorize", paramLabel = "FILE",
      description = {"Grants: {\"grants\":[{\"identity\":\"spiffe://...\",\"services\":[\"greeter\",\"billing-*\"]}]};",
          "each client identity reads only the services granted to it. Reloaded on change."})
  @Nullable Path authorize;

  @Option(names = "--max-streams-per-peer", paramLabel = "N", defaultValue = "" + StreamLimits.DEFAULT_STREAMS_PER_PEER,
      description = "Concurrent ADS streams from one IP address (default: ${DEFAULT-VALUE}).")
  int maxStreamsPerPeer = StreamLimits.DEFAULT_STREAMS_PER_PEER;

  @Option(names = "--max-streams", paramLabel = "N", defaultValue = "" + StreamLimits.DEFAULT_STREAMS,
      description = "Concurrent ADS streams in total (default: ${DEFAULT-VALUE}).")
  int maxStreams = StreamLimits.DEFAULT_STREAMS;

  @Option(names = "--max-names-per-stream", paramLabel = "N", defaultValue = "" + StreamLimits.DEFAULT_NAMES_PER_STREAM,
      description = "Resource names one stream subscribes to, per type (default: ${DEFAULT-VALUE}).")
  int maxNamesPerStream = StreamLimits.DEFAULT_NAMES_PER_STREAM;

  @Option(names = "--max-zones", paramLabel = "N", defaultValue = "" + Subscribers.DEFAULT_MAX_ZONES,
      description = {"Zones served at once, each its own assignments; a client naming another one",
          "gets the zone-blind assignment (default: ${DEFAULT-VALUE})."})
  int maxZones = Subscribers.DEFAULT_MAX_ZONES;

  @Option(names = "--metrics-port", paramLabel = "PORT", defaultValue = "-1",
      description = "Serve GET /metrics (Prometheus text) on this port; 0 any free port; off by default.")
  int metricsPort = -1;

  private final PrintWriter out;
  private final CountDownLatch stop;

  XdsMain(PrintWriter out, CountDownLatch stop) {
    this.out = out;
    this.stop = stop;
  }

  public static void main(String[] args) {
    if (System.getProperty("logback.configurationFile") == null) {
      System.setProperty("logback.configurationFile", "io/steelyard/xds/logback-xds.xml");
    }
    org.slf4j.bridge.SLF4JBridgeHandler.removeHandlersForRootLogger();
    org.slf4j.bridge.SLF4JBridgeHandler.install();
    CountDownLatch stop = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(stop::countDown, "steelyard-xds-stop"));
    PrintWriter out = new PrintWriter(System.out, true);
    System.exit(commandLine(new XdsMain(out, stop)).execute(args));
  }

  /** The command, with a bad argument (IllegalArgumentException) exiting 2 with one line. */
  static CommandLine commandLine(XdsMain main) {
    return new CommandLine(main)
        .setExecutionExceptionHandler(
            (e, cmd, parsed) -> {
              if (e instanceof IllegalArgumentException) {
                cmd.getErr().println("steelyard-xds: " + e.getMessage());
                return 2;
              }
              throw e;
            });
  }

  /** {@code all} → null; otherwise the listed names. */
  @Nullable
  static Set<String> parseServices(String services) {
    if (services.trim().equals("all")) {
      return null;
    }
    List<String> names = Splitter.on(',').trimResults().omitEmptyStrings().splitToList(services);
    if (names.isEmpty()) {
      throw new IllegalArgumentException("services: '" + services + "' (expected: a,b or all)");
    }
    return new LinkedHashSet<>(names);
  }

  /** The listening, TLS, grant and limit options, checked by the builder's one set of rules. */
  void trust(XdsServer.Builder builder) {
    if (tlsCert != null) {
      builder.tls(tlsCert, tlsKey);
    }
    if (tlsClientCa != null) {
      builder.clientCa(tlsClientCa);
    }
    if (tlsListen != null) {
      HostAndPort tls;
      try {
        tls = HostAndPort.fromString(tlsListen);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("tls-listen: '" + tlsListen + "' (expected: HOST:PORT)", e);
      }
      if (!tls.hasPort()) {
        throw new IllegalArgumentException("tls-listen: '" + tlsListen + "' (expected: HOST:PORT)");
      }
      builder.tlsListen(tls.getHost(), tls.getPort());
    }
    if (insecureListen) {
      builder.insecureListen();
    }
    if (authorize != null) {
      builder.authorize(authorize);
    }
    builder.maxStreamsPerPeer(maxStreamsPerPeer).maxStreams(maxStreams).maxNamesPerStream(maxNamesPerStream)
        .maxZones(maxZones);
  }

  @Override
  public Integer call() throws Exception {
    if ((tlsCert == null) != (tlsKey == null)) {
      throw new IllegalArgumentException("tls: --tls-cert and --tls-key go together");
    }
    EtcdConnection connection = etcd.connection();
    PrometheusMeterRegistry meters = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    new io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics().bindTo(meters);
    new io.micrometer.core.instrument.binder.jvm.JvmGcMetrics().bindTo(meters);
    new io.micrometer.core.instrument.binder.system.ProcessorMetrics().bindTo(meters);
    new io.steelyard.registry.CertificateMetrics().bindTo(meters); // etcd's TLS files
    XdsServer.Builder builder =
        XdsServer.builder(connection).layout(etcd.layout()).host(host).port(port).meterRegistry(meters);
    Set<String> selected = parseServices(services);
    if (selected != null) {
      builder.services(selected);
    }
    trust(builder);
    try (XdsServer server = builder.build().start();
        MetricsEndpoint metrics = metricsPort < 0 ? null : MetricsEndpoint.start(host, metricsPort, meters::scrape)) {
      String shownHost = host.equals("0.0.0.0") ? "127.0.0.1" : host;
      if (metrics != null) {
        out.println("METRICS url=" + metrics.url());
      }
      if (tlsListen != null) {
        HostAndPort tls = HostAndPort.fromString(tlsListen);
        String tlsHost = tls.getHost().equals("0.0.0.0") ? "127.0.0.1" : tls.getHost();
        out.println("TLS xds=" + HostAndPort.fromParts(tlsHost, server.tlsPort()));
      }
      out.println("READY xds=" + HostAndPort.fromParts(shownHost, server.port()));
      out.flush();
      stop.await();
    }
    return 0;
  }
}
