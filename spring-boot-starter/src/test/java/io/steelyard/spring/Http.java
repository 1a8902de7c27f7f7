package io.steelyard.spring;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** Plain HTTP to an application's actuator, on loopback, with a bound on every call. */
final class Http {

  /** A status and a body. */
  record Response(int status, String body) {}

  private static final HttpClient CLIENT =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  private Http() {}

  static Response get(int port, String path) {
    return send(HttpRequest.newBuilder(uri(port, path)).GET());
  }

  static Response postJson(int port, String path, String json) {
    return send(HttpRequest.newBuilder(uri(port, path))
        .header("Content-Type", "application/json")
        .POST(HttpRequest.BodyPublishers.ofString(json)));
  }

  private static URI uri(int port, String path) {
    return URI.create("http://127.0.0.1:" + port + path);
  }

  private static Response send(HttpRequest.Builder request) {
    try {
      HttpResponse<String> r = CLIENT.send(
          request.timeout(Duration.ofSeconds(20)).build(), HttpResponse.BodyHandlers.ofString());
      return new Response(r.statusCode(), r.body());
    } catch (IOException e) {
      throw new AssertionError("HTTP call failed", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }
}
