package io.steelyard.console;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Metrics endpoints for test instances: at {@code /metrics/ADDRESS}, the agent's call counter and
 * latency histogram in Prometheus' text format, growing at the rate the test sets for that
 * address (calls since start = rate × seconds), with a fixed latency spread and error ratio.
 */
final class FakeMetrics implements AutoCloseable {

  /** Upper bounds of the histogram and the share of calls at or below each. */
  private static final double[] BOUNDS = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05};
  private static final double[] CUMULATIVE = {0.20, 0.55, 0.82, 0.95, 0.993, 0.999};

  private final HttpServer server;
  private final long startNanos = System.nanoTime();
  private final Map<String, Double> rates = new ConcurrentHashMap<>();
  private final String service;

  FakeMetrics(String service) {
    this.service = service;
    try {
      server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    server.createContext("/metrics/", ex -> {
      String address = ex.getRequestURI().getPath().substring("/metrics/".length());
      byte[] body = text(address).getBytes(StandardCharsets.UTF_8);
      ex.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4");
      ex.sendResponseHeaders(200, body.length);
      try (OutputStream out = ex.getResponseBody()) {
        out.write(body);
      }
    });
    server.start();
  }

  /** The URL an instance at {@code address} advertises. */
  String url(String address) {
    return "http://127.0.0.1:" + server.getAddress().getPort() + "/metrics/" + address;
  }

  void rate(String address, double callsPerSecond) {
    rates.put(address, callsPerSecond);
  }

  private String text(String address) {
    double seconds = (System.nanoTime() - startNanos) / 1e9;
    double calls = rates.getOrDefault(address, 0.0) * seconds;
    double errors = calls * 0.002;
    StringBuilder b = new StringBuilder();
    b.append("# TYPE steelyard_server_calls_total counter\n");
    line(b, "steelyard_server_calls_total", "status=\"OK\"", calls - errors);
    line(b, "steelyard_server_calls_total", "status=\"UNAVAILABLE\"", errors);
    b.append("# TYPE steelyard_server_call_duration_seconds histogram\n");
    for (int i = 0; i < BOUNDS.length; i++) {
      line(b, "steelyard_server_call_duration_seconds_bucket", "le=\"" + BOUNDS[i] + "\"",
          Math.floor(calls * CUMULATIVE[i]));
    }
    line(b, "steelyard_server_call_duration_seconds_bucket", "le=\"+Inf\"", Math.floor(calls));
    return b.toString();
  }

  private void line(StringBuilder b, String name, String label, double value) {
    b.append(name).append("{service=\"").append(service).append("\",method=\"SayHello\",")
        .append(label).append("} ").append(String.format(Locale.ROOT, "%.1f", value)).append('\n');
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
