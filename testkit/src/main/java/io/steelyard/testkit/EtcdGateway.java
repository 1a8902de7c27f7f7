package io.steelyard.testkit;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;

/**
 * Calls etcd's JSON gateway ({@code POST /v3/...}) and reads {@code /metrics}, over plain HTTP, so
 * the fault tools need no etcd client at compile scope. Bytes fields (keys, values) travel as
 * base64 and 64-bit integers as JSON strings, as the gateway expects (verified against 3.4.23).
 */
final class EtcdGateway {

  private static final HttpClient CLIENT =
      HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(2))
          .build();

  private EtcdGateway() {}

  /** The HTTP status and body of one gateway call. */
  record Reply(int status, String body) {
    boolean ok() {
      return status == 200;
    }
  }

  /** POSTs {@code json} to {@code path}; a transport failure is an {@link IllegalStateException}. */
  static Reply post(URI endpoint, String path, String json, Duration timeout) {
    HttpRequest request =
        HttpRequest.newBuilder(endpoint.resolve(path))
            .timeout(timeout)
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(json))
            .build();
    return send(request);
  }

  /** Like {@link #post} but fails unless etcd answered 200. */
  static String postOk(URI endpoint, String path, String json, Duration timeout) {
    Reply reply = post(endpoint, path, json, timeout);
    if (!reply.ok()) {
      throw new IllegalStateException(
          "etcd at " + endpoint + " refused " + path + ": HTTP " + reply.status() + " " + reply.body());
    }
    return reply.body();
  }

  /**
   * The sum of every sample of {@code name} in the member's Prometheus text whose labels include
   * each {@code label="value"} pair given, e.g. {@code metric(uri, "grpc_server_started_total",
   * "grpc_method", "Watch")}; 0 when there is none.
   */
  static double metric(URI endpoint, String name, String... labelPairs) {
    if (labelPairs.length % 2 != 0) {
      throw new IllegalArgumentException("labels: " + labelPairs.length + " strings (expected: name/value pairs)");
    }
    HttpRequest request =
        HttpRequest.newBuilder(endpoint.resolve("/metrics")).timeout(Duration.ofSeconds(5)).GET().build();
    Reply reply = send(request);
    if (!reply.ok()) {
      throw new IllegalStateException("etcd at " + endpoint + " has no /metrics: HTTP " + reply.status());
    }
    double sum = 0;
    for (String line : reply.body().split("\n")) {
      if (line.startsWith("#") || !line.startsWith(name)) {
        continue;
      }
      int space = line.lastIndexOf(' ');
      String series = line.substring(0, space);
      if (!series.equals(name) && !series.startsWith(name + "{")) {
        continue; // a longer metric name sharing the prefix
      }
      boolean matches = true;
      for (int i = 0; i < labelPairs.length && matches; i += 2) {
        matches = series.contains(labelPairs[i] + "=\"" + labelPairs[i + 1] + "\"");
      }
      if (matches) {
        sum += Double.parseDouble(line.substring(space + 1));
      }
    }
    return sum;
  }

  static String base64(String s) {
    return Base64.getEncoder().encodeToString(s.getBytes(StandardCharsets.UTF_8));
  }

  static String base64(byte[] b) {
    return Base64.getEncoder().encodeToString(b);
  }

  private static Reply send(HttpRequest request) {
    try {
      HttpResponse<String> response = CLIENT.send(request, HttpResponse.BodyHandlers.ofString());
      return new Reply(response.statusCode(), response.body());
    } catch (IOException e) {
      throw new IllegalStateException("etcd did not answer " + request.uri() + ": " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while calling " + request.uri(), e);
    }
  }
}
