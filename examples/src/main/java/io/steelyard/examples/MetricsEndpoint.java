package io.steelyard.examples;

import static java.util.Objects.requireNonNull;

import com.google.common.net.HostAndPort;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

/**
 * {@code GET /metrics}: a {@link PrometheusMeterRegistry} in the Prometheus text format, on the
 * JDK's own HTTP server (one thread; a scrape is a few milliseconds).
 *
 * <pre>{@code
 * try (MetricsEndpoint metrics = MetricsEndpoint.start("127.0.0.1", 0)) {
 *   AgentMetrics.of(metrics.registry()).bind(registration);
 *   System.out.println("METRICS url=" + metrics.url());
 * }
 * }</pre>
 */
public final class MetricsEndpoint implements AutoCloseable {

  private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final HttpServer server;
  private final String url;

  private MetricsEndpoint(String host, int port) {
    try {
      server = HttpServer.create(new InetSocketAddress(host, port), 0);
    } catch (IOException e) {
      throw new UncheckedIOException(
          "cannot serve metrics on " + HostAndPort.fromParts(host, port), e);
    }
    server.createContext("/metrics", this::scrape);
    server.start();
    url = "http://" + HostAndPort.fromParts(host, server.getAddress().getPort()) + "/metrics";
  }

  /** Serves metrics on {@code host:port} (0: any free port). */
  public static MetricsEndpoint start(String host, int port) {
    return new MetricsEndpoint(requireNonNull(host, "host"), port);
  }

  public PrometheusMeterRegistry registry() {
    return registry;
  }

  /** {@code http://HOST:PORT/metrics}. */
  public String url() {
    return url;
  }

  private void scrape(HttpExchange exchange) throws IOException {
    try (exchange) {
      byte[] body = registry.scrape().getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
      exchange.sendResponseHeaders(200, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    }
  }

  @Override
  public void close() {
    server.stop(0);
    registry.close();
  }
}
