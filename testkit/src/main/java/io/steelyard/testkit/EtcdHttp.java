package io.steelyard.testkit;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Optional;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Health, readiness and leadership probes over etcd's plain HTTP endpoints, so the testkit needs
 * no etcd client at compile scope. Verified against etcd 3.4.23: {@code GET /health} answers
 * {@code {"health":"true"}} and the grpc-gateway {@code POST /v3/maintenance/status} with body
 * {@code {}} answers {@code {"header":{..."member_id":"136..."...},..."leader":"136..."}} (uint64
 * values are JSON strings; we also accept bare numbers).
 */
final class EtcdHttp {

  private static final HttpClient CLIENT =
      HttpClient.newBuilder()
          .version(HttpClient.Version.HTTP_1_1)
          .connectTimeout(Duration.ofSeconds(1))
          .build();
  private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(2);
  private static final Duration SETUP_TIMEOUT = Duration.ofSeconds(15);
  private static final long POLL_MILLIS = 100;
  private static final Pattern HEALTHY = Pattern.compile("\"health\"\\s*:\\s*\"?true\"?");
  private static final Pattern MEMBER_ID = Pattern.compile("\"member_id\"\\s*:\\s*\"?(\\d+)\"?");
  private static final Pattern LEADER = Pattern.compile("\"leader\"\\s*:\\s*\"?(\\d+)\"?");

  private EtcdHttp() {}

  /** Member id and the leader id it believes in ({@code "0"} when it knows none). */
  record Status(String memberId, String leaderId) {
    boolean isLeader() {
      return !"0".equals(leaderId) && memberId.equals(leaderId);
    }
  }

  static boolean isHealthy(URI endpoint) {
    return get(endpoint, "/health").filter(body -> HEALTHY.matcher(body).find()).isPresent();
  }

  /**
   * Whether the member accepts TCP connections on its client port. etcd binds its listeners early
   * but serves requests only once it has joined a quorum, so this is the only readiness signal for
   * a member started while most of its cluster is down.
   */
  static boolean listening(URI endpoint) {
    try (java.net.Socket socket = new java.net.Socket()) {
      socket.connect(new java.net.InetSocketAddress(endpoint.getHost(), endpoint.getPort()), 500);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** Whether the member answers HTTP at all (it may still lack a leader). */
  static boolean answers(URI endpoint) {
    return get(endpoint, "/version").isPresent();
  }

  static Optional<Status> status(URI endpoint) {
    HttpRequest request =
        HttpRequest.newBuilder(endpoint.resolve("/v3/maintenance/status"))
            .timeout(REQUEST_TIMEOUT)
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString("{}"))
            .build();
    return send(request)
        .flatMap(
            body -> {
              Matcher member = MEMBER_ID.matcher(body);
              Matcher leader = LEADER.matcher(body);
              if (!member.find() || !leader.find()) {
                return Optional.empty();
              }
              return Optional.of(new Status(member.group(1), leader.group(1)));
            });
  }

  /**
   * Creates {@code user} with {@code password} and the {@code root} role, then enables auth,
   * through etcd's JSON gateway (so the testkit needs no etcd client).
   *
   * @throws IllegalStateException naming the step etcd refused
   */
  static void enableAuth(URI endpoint, String user, String password) {
    post(endpoint, "/v3/auth/user/add", "{\"name\":" + json(user) + ",\"password\":" + json(password) + "}", null);
    post(endpoint, "/v3/auth/role/add", "{\"name\":\"root\"}", null);
    post(endpoint, "/v3/auth/user/grant", "{\"user\":" + json(user) + ",\"role\":\"root\"}", null);
    post(endpoint, "/v3/auth/enable", "{}", null);
  }

  private static final Pattern TOKEN = Pattern.compile("\"token\"\\s*:\\s*\"([^\"]+)\"");

  /** A token for {@code user}, for {@link #post}'s {@code token}. */
  static String authenticate(URI endpoint, String user, String password) {
    String body =
        post(endpoint, "/v3/auth/authenticate", "{\"name\":" + json(user) + ",\"password\":" + json(password) + "}", null);
    Matcher m = TOKEN.matcher(body);
    if (!m.find()) {
      throw new IllegalStateException("etcd gave no token for " + user + ": " + body);
    }
    return m.group(1);
  }

  /** POSTs {@code body} (JSON), as {@code token}'s user if not null; returns the response body. */
  static String post(URI endpoint, String path, String body, String token) {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(endpoint.resolve(path))
            // One-shot set-up calls, not polled probes: patient enough for a loaded CI machine.
            .timeout(SETUP_TIMEOUT)
            .header("Content-Type", "application/json")
            .POST(HttpRequest.BodyPublishers.ofString(body));
    if (token != null) {
      b.header("Authorization", token);
    }
    HttpRequest request = b.build();
    try {
      HttpResponse<String> response = CLIENT.send(request, HttpResponse.BodyHandlers.ofString());
      if (response.statusCode() != 200) {
        throw new IllegalStateException(
            "etcd refused " + path + ": HTTP " + response.statusCode() + " " + response.body());
      }
      return response.body();
    } catch (IOException e) {
      throw new IllegalStateException("etcd at " + endpoint + " did not answer " + path, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while calling " + path, e);
    }
  }

  static String json(String s) {
    StringBuilder sb = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') {
        sb.append('\\').append(c);
      } else if (c < 0x20) {
        sb.append(String.format("\\u%04x", (int) c));
      } else {
        sb.append(c);
      }
    }
    return sb.append('"').toString();
  }

  /**
   * Polls until {@code ready} holds; fails fast with {@code diagnostics} when {@code alive} turns
   * false or the timeout passes.
   */
  static void await(
      String what,
      BooleanSupplier ready,
      BooleanSupplier alive,
      Duration timeout,
      Supplier<String> diagnostics) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      if (ready.getAsBoolean()) {
        return;
      }
      if (!alive.getAsBoolean()) {
        throw new IllegalStateException(what + ": process exited" + diagnostics.get());
      }
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException(what + ": not ready after " + timeout + diagnostics.get());
      }
      pause();
    }
  }

  static void pause() {
    try {
      Thread.sleep(POLL_MILLIS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting for etcd", e);
    }
  }

  private static Optional<String> get(URI endpoint, String path) {
    return send(HttpRequest.newBuilder(endpoint.resolve(path)).timeout(REQUEST_TIMEOUT).GET().build());
  }

  private static Optional<String> send(HttpRequest request) {
    try {
      HttpResponse<String> response = CLIENT.send(request, HttpResponse.BodyHandlers.ofString());
      return response.statusCode() == 200 ? Optional.of(response.body()) : Optional.empty();
    } catch (IOException e) {
      return Optional.empty();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while probing " + request.uri(), e);
    }
  }
}
