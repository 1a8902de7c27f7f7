package io.steelyard.xds;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

/** {@code GET /metrics} in the Prometheus text format, on the JDK's HTTP server. */
final class MetricsHttp implements AutoCloseable {

  private final HttpServer server;
  private final PrometheusMeterRegistry registry;

  MetricsHttp(String host, int port, PrometheusMeterRegistry registry) {
    this.registry = registry;
    try {
      server = HttpServer.create(new InetSocketAddress(host, port), 0);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot serve metrics on " + host + ":" + port, e);
    }
    server.createContext("/metrics", this::scrape);
    server.start();
  }

  int port() {
    return server.getAddress().getPort();
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
  }
}
