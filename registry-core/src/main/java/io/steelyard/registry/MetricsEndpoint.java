package io.steelyard.registry;

import static java.util.Objects.requireNonNull;

import com.google.common.net.HostAndPort;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.function.Supplier;

/**
 * {@code GET /metrics} in the Prometheus text format, on the JDK's own HTTP server: what a process
 * without a web framework ({@code bin/steelyard-xds}, the example greeters) serves to Prometheus.
 * The body is whatever {@code scrape} returns at each request, typically a Micrometer {@code
 * PrometheusMeterRegistry}'s {@code scrape()}, so this module needs no Prometheus library.
 *
 * <pre>{@code
 * PrometheusMeterRegistry meters = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
 * try (MetricsEndpoint metrics = MetricsEndpoint.start("127.0.0.1", 0, meters::scrape)) {
 *   System.out.println("METRICS url=" + metrics.url());
 * }
 * }</pre>
 *
 * <p>Threading: requests are answered one at a time on the HTTP server's own thread (a scrape
 * takes a few milliseconds), so {@code scrape} needs no locking of its own. Closing stops the
 * server at once; it does not close what {@code scrape} reads.
 */
public final class MetricsEndpoint implements AutoCloseable {

  /** The content type Prometheus expects of its text format. */
  static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

  private final HttpServer server;
  private final Supplier<String> scrape;
  private final String url;

  private MetricsEndpoint(String host, int port, Supplier<String> scrape) {
    this.scrape = scrape;
    try {
      server = HttpServer.create(new InetSocketAddress(host, port), 0);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot serve metrics on " + HostAndPort.fromParts(host, port), e);
    }
    server.createContext("/metrics", this::answer);
    server.start();
    String shown = host.equals("0.0.0.0") ? "127.0.0.1" : host;
    url = "http://" + HostAndPort.fromParts(shown, port()) + "/metrics";
  }

  /**
   * Serves {@code scrape}'s text at {@code http://host:port/metrics} ({@code port} 0: any free
   * port).
   *
   * @throws UncheckedIOException when the address cannot be bound
   */
  public static MetricsEndpoint start(String host, int port, Supplier<String> scrape) {
    requireNonNull(host, "host");
    requireNonNull(scrape, "scrape");
    if (port < 0 || port > 65_535) {
      throw new IllegalArgumentException("port: " + port + " (expected: 0..65535)");
    }
    return new MetricsEndpoint(host, port, scrape);
  }

  /** The port it listens on (the one chosen, for port 0). */
  public int port() {
    return server.getAddress().getPort();
  }

  /** {@code http://HOST:PORT/metrics}; a wildcard host reads as {@code 127.0.0.1}. */
  public String url() {
    return url;
  }

  private void answer(HttpExchange exchange) throws IOException {
    try (exchange) {
      String method = exchange.getRequestMethod();
      if (!method.equals("GET") && !method.equals("HEAD")) {
        exchange.getResponseHeaders().set("Allow", "GET, HEAD");
        exchange.sendResponseHeaders(405, -1);
        return;
      }
      byte[] body = scrape.get().getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().set("Content-Type", CONTENT_TYPE);
      if (method.equals("HEAD")) {
        exchange.sendResponseHeaders(200, -1);
        return;
      }
      exchange.sendResponseHeaders(200, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    }
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
