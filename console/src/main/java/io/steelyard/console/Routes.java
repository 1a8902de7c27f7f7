package io.steelyard.console;

import static java.util.Objects.requireNonNull;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Semaphore;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every URL of the console. Pages: {@code /} (services), {@code /services/NAME} (one service),
 * {@code /assets/FILE}. API: {@code GET /api/services}, {@code GET /api/services/NAME}, {@code GET
 * /api/services/NAME/stream} (server-sent events), {@code GET /api/events}, {@code POST
 * /api/actions}. {@link Access} is checked first on every request.
 *
 * <p>Threading: called on the HTTP server's threads; an event stream holds its thread until the
 * page goes away or the console closes.
 */
final class Routes implements HttpHandler {

  private static final Logger logger = LoggerFactory.getLogger(Routes.class);

  static final int MAX_STREAMS = 32;
  private static final int MAX_BODY_BYTES = 4096;
  private static final Duration HEARTBEAT = Duration.ofSeconds(15);
  private static final Map<String, String> ASSETS = Map.of(
      "console.css", "text/css; charset=utf-8",
      "console.js", "text/javascript; charset=utf-8",
      "services.js", "text/javascript; charset=utf-8",
      "service.js", "text/javascript; charset=utf-8");

  private final Access access;
  private final boolean readOnly;
  private final FleetWatch fleet;
  private final ServicePages views;
  private final Actions actions;
  private final Clock clock;
  private final Semaphore streams = new Semaphore(MAX_STREAMS);
  private volatile boolean closed;

  Routes(Access access, boolean readOnly, FleetWatch fleet, ServicePages views, Actions actions,
      Clock clock) {
    this.access = requireNonNull(access, "access");
    this.readOnly = readOnly;
    this.fleet = requireNonNull(fleet, "fleet");
    this.views = requireNonNull(views, "views");
    this.actions = requireNonNull(actions, "actions");
    this.clock = requireNonNull(clock, "clock");
  }

  ServicePages views() {
    return views;
  }

  void close() {
    closed = true;
  }

  @Override
  public void handle(HttpExchange ex) throws IOException {
    try (ex) {
      securityHeaders(ex);
      if (!access.hostAllowed(ex.getRequestHeaders())) {
        text(ex, 403, "forbidden: Host " + ex.getRequestHeaders().getFirst("Host")
            + " is not loopback; use http://127.0.0.1 or set --token-file");
        return;
      }
      String path = ex.getRequestURI().getRawPath();
      String method = ex.getRequestMethod();
      if (!access.authorized(ex.getRequestHeaders())) {
        String query = ex.getRequestURI().getRawQuery();
        String offered = tokenParameter(query);
        if ("GET".equals(method) && offered != null && access.matches(offered)) {
          ex.getResponseHeaders().add("Set-Cookie", access.cookieFor(offered));
          // Back to the same page without the token in the URL (never to another host: "//x").
          ex.getResponseHeaders().add("Location", path.startsWith("//") ? "/" : path);
          ex.sendResponseHeaders(303, -1);
          return;
        }
        ex.getResponseHeaders().add("WWW-Authenticate", "Bearer realm=\"steelyard console\"");
        text(ex, 401, "unauthorized: this console needs its token"
            + " (open /?token=TOKEN once, or send Authorization: Bearer TOKEN)");
        return;
      }
      route(ex, method, path);
    } catch (IOException e) {
      logger.debug("console: {} {} ended early: {}", ex.getRequestMethod(), ex.getRequestURI(), e.toString());
    } catch (RuntimeException e) {
      logger.warn("console: {} {} failed", ex.getRequestMethod(), ex.getRequestURI(), e);
    }
  }

  private void route(HttpExchange ex, String method, String path) throws IOException {
    if (path.equals("/api/actions")) {
      if (!"POST".equals(method)) {
        text(ex, 405, "method not allowed: POST only");
        return;
      }
      action(ex);
      return;
    }
    if (!"GET".equals(method) && !"HEAD".equals(method)) {
      text(ex, 405, "method not allowed: GET only");
      return;
    }
    if (path.equals("/")) {
      asset(ex, "services.html", "text/html; charset=utf-8");
    } else if (path.startsWith("/services/") && segments(path, "/services/") == 1) {
      asset(ex, "service.html", "text/html; charset=utf-8");
    } else if (path.startsWith("/assets/") && ASSETS.containsKey(path.substring(8))) {
      asset(ex, path.substring(8), ASSETS.get(path.substring(8)));
    } else if (path.equals("/api/services")) {
      fleet.scrapeIfDue();
      json(ex, 200, fleet.json(readOnly));
    } else if (path.equals("/api/events")) {
      json(ex, 200, events());
    } else if (path.startsWith("/api/services/")) {
      String rest = path.substring("/api/services/".length());
      boolean stream = rest.endsWith("/stream");
      String service = decode(stream ? rest.substring(0, rest.length() - 7) : rest);
      ServicePage view;
      try {
        view = views.get(service);
      } catch (IllegalArgumentException e) {
        text(ex, 404, "not found: " + e.getMessage());
        return;
      }
      if (view == null) {
        text(ex, 503, "too many services open at once; try again in a minute");
      } else if (stream) {
        stream(ex, view);
      } else {
        json(ex, 200, view.json(readOnly));
      }
    } else {
      text(ex, 404, "not found: " + path);
    }
  }

  private void action(HttpExchange ex) throws IOException {
    if (readOnly) {
      text(ex, 403, "read-only console: actions are turned off (--read-only)");
      return;
    }
    String refusal = access.writeRefusal(ex.getRequestHeaders());
    if (refusal != null) {
      text(ex, 403, refusal);
      return;
    }
    JsonObject body;
    try (InputStream in = ex.getRequestBody()) {
      byte[] bytes = in.readNBytes(MAX_BODY_BYTES + 1);
      if (bytes.length > MAX_BODY_BYTES) {
        text(ex, 413, "request too large");
        return;
      }
      JsonElement parsed = JsonParser.parseString(new String(bytes, StandardCharsets.UTF_8));
      body = parsed.isJsonObject() ? parsed.getAsJsonObject() : new JsonObject();
    } catch (JsonParseException e) {
      text(ex, 400, "bad request: the body is not JSON");
      return;
    }
    Actions.Request request = new Actions.Request(
        string(body, "action"), string(body, "service"), string(body, "address"),
        string(body, "weight"));
    String who = ex.getRemoteAddress().getAddress().getHostAddress();
    Actions.Outcome outcome = actions.run(request, who);
    JsonObject o = new JsonObject();
    o.addProperty("ok", outcome.ok());
    o.addProperty("message", outcome.message());
    json(ex, outcome.status(), o);
  }

  private JsonObject events() {
    JsonArray array = new JsonArray();
    for (EventLog.Event e : actions.log().newestFirst()) {
      JsonObject j = new JsonObject();
      j.addProperty("at", e.at().toString());
      j.addProperty("who", e.who());
      j.addProperty("action", e.action());
      j.addProperty("service", e.service());
      j.addProperty("address", e.address());
      j.addProperty("ok", e.ok());
      j.addProperty("message", e.message());
      array.add(j);
    }
    JsonObject o = new JsonObject();
    o.add("events", array);
    return o;
  }

  /** Sends the view now and after every change (heartbeat comments keep proxies from idling). */
  private void stream(HttpExchange ex, ServicePage view) throws IOException {
    if (!streams.tryAcquire()) {
      text(ex, 503, "too many open pages; close one and reload");
      return;
    }
    try {
      ex.getResponseHeaders().set("Content-Type", "text/event-stream; charset=utf-8");
      ex.getResponseHeaders().set("Cache-Control", "no-store");
      ex.sendResponseHeaders(200, 0);
      OutputStream out = ex.getResponseBody();
      long seen = -1;
      String last = null;
      long lastSentMillis = 0;
      while (!closed) {
        view.viewed();
        String data = view.json(readOnly).toString();
        long now = clock.millis();
        if (!data.equals(last)) {
          out.write(("data: " + data + "\n\n").getBytes(StandardCharsets.UTF_8));
          out.flush();
          last = data;
          lastSentMillis = now;
        } else if (now - lastSentMillis >= HEARTBEAT.toMillis()) {
          out.write(":\n\n".getBytes(StandardCharsets.UTF_8));
          out.flush();
          lastSentMillis = now;
        }
        seen = view.awaitChange(seen, Duration.ofSeconds(1));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      streams.release();
    }
  }

  private static void securityHeaders(HttpExchange ex) {
    var h = ex.getResponseHeaders();
    h.set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; "
        + "frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
    h.set("X-Content-Type-Options", "nosniff");
    h.set("Referrer-Policy", "no-referrer");
    h.set("X-Frame-Options", "DENY");
  }

  private void asset(HttpExchange ex, String name, String type) throws IOException {
    try (InputStream in = Routes.class.getResourceAsStream("assets/" + name)) {
      if (in == null) {
        text(ex, 404, "not found: " + name);
        return;
      }
      send(ex, 200, type, in.readAllBytes());
    }
  }

  private static void json(HttpExchange ex, int status, JsonObject o) throws IOException {
    ex.getResponseHeaders().set("Cache-Control", "no-store");
    send(ex, status, "application/json; charset=utf-8", o.toString().getBytes(StandardCharsets.UTF_8));
  }

  private static void text(HttpExchange ex, int status, String message) throws IOException {
    send(ex, status, "text/plain; charset=utf-8", (message + "\n").getBytes(StandardCharsets.UTF_8));
  }

  private static void send(HttpExchange ex, int status, String type, byte[] body) throws IOException {
    ex.getResponseHeaders().set("Content-Type", type);
    if ("HEAD".equals(ex.getRequestMethod())) {
      ex.sendResponseHeaders(status, -1);
      return;
    }
    ex.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
    try (OutputStream out = ex.getResponseBody()) {
      out.write(body);
    }
  }

  private static int segments(String path, String prefix) {
    String rest = path.substring(prefix.length());
    return rest.isEmpty() || rest.contains("/") ? 0 : 1;
  }

  private static String decode(String s) {
    return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
  }

  @Nullable
  private static String tokenParameter(@Nullable String rawQuery) {
    if (rawQuery == null) {
      return null;
    }
    for (String pair : rawQuery.split("&")) {
      if (pair.startsWith("token=")) {
        return decode(pair.substring(6));
      }
    }
    return null;
  }

  @Nullable
  private static String string(JsonObject o, String name) {
    JsonElement e = o.get(name);
    return e == null || e.isJsonNull() ? null : e.isJsonPrimitive() ? e.getAsString() : e.toString();
  }
}
