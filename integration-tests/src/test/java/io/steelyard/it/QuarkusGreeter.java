package io.steelyard.it;

import com.google.gson.Gson;
import com.google.gson.JsonObject;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One process of examples/quarkus-greeter ({@code target/quarkus-app/quarkus-run.jar}, what
 * {@code bin/quarkus-greeter} runs), started as a user starts it: system properties, a READY line
 * on stdout, logs in {@code target/quarkus-greeter-NAME.err}.
 */
final class QuarkusGreeter implements AutoCloseable {

  static final Path APP = Path.of("..", "examples", "quarkus-greeter", "target", "quarkus-app", "quarkus-run.jar");

  private static final Pattern READY = Pattern.compile("READY address=(127\\.0\\.0\\.1:(\\d+)) service=greeter .*");
  private static final HttpClient HTTP = HttpClient.newHttpClient();
  private static final Gson GSON = new Gson();

  private final String name;
  private final Process process;
  private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
  private String address;
  private int port;

  private QuarkusGreeter(String name, Process process) {
    this.name = name;
    this.process = process;
    Thread reader = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(
          new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = r.readLine()) != null; ) {
          lines.add(line);
        }
      } catch (IOException ignored) {
        // The process ended.
      }
    }, "quarkus-greeter-" + name);
    reader.setDaemon(true);
    reader.start();
  }

  /** Starts one instance with {@code properties} ({@code key=value}, given as -D). */
  static QuarkusGreeter start(String name, String endpoints, String... properties) throws IOException {
    if (!Files.isRegularFile(APP)) {
      throw new IllegalStateException(APP + " missing: build examples/quarkus-greeter first (-am)");
    }
    List<String> cmd = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xmx128m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
        "-Dquarkus.http.port=0",
        "-Dgreeter.endpoints=" + endpoints));
    for (String p : properties) {
      cmd.add("-D" + p);
    }
    cmd.addAll(List.of("-jar", APP.toString()));
    Process p = new ProcessBuilder(cmd)
        .redirectError(Path.of("target", "quarkus-greeter-" + name + ".err").toFile())
        .start();
    return new QuarkusGreeter(name, p);
  }

  /** Waits for the READY line; returns this. */
  QuarkusGreeter awaitReady(Duration timeout) throws InterruptedException {
    String line = lines.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
    if (line == null) {
      throw new AssertionError(name + ": no READY line within " + timeout
          + " (stderr in target/quarkus-greeter-" + name + ".err)");
    }
    Matcher m = READY.matcher(line);
    if (!m.matches()) {
      throw new AssertionError(name + ": first stdout line is not READY: " + line);
    }
    address = m.group(1);
    port = Integer.parseInt(m.group(2));
    return this;
  }

  String address() {
    return address;
  }

  /** {@code GET /calls}: {@code n} calls to greeter over {@code transport} from {@code parallel} threads. */
  Calls calls(String transport, int n, int parallel) throws IOException, InterruptedException {
    HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(
                "http://" + address + "/calls?transport=" + transport + "&n=" + n + "&parallel=" + parallel))
            .timeout(Duration.ofSeconds(120)).build(),
        HttpResponse.BodyHandlers.ofString());
    if (r.statusCode() != 200) {
      throw new AssertionError(name + " /calls answered " + r.statusCode() + ": " + r.body());
    }
    return Calls.of(GSON.fromJson(r.body(), JsonObject.class));
  }

  /** SIGTERM, as an orchestrator stops an instance. */
  void sigterm() {
    process.destroy();
  }

  boolean awaitExit(Duration timeout) throws InterruptedException {
    return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  @Override
  public void close() throws InterruptedException {
    if (process.isAlive()) {
      process.destroy();
      if (!process.waitFor(20, TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor(20, TimeUnit.SECONDS);
      }
    }
  }

  /** The calls of one {@code /calls} answer: who answered each, and when it started. */
  record Calls(String transport, long[] startedMillis, String[] answeredBy, List<String> errors) {

    static Calls of(JsonObject json) {
      List<String> servers = new ArrayList<>();
      json.getAsJsonArray("servers").forEach(s -> servers.add(s.getAsString()));
      var started = json.getAsJsonArray("startedMillis");
      var by = json.getAsJsonArray("answeredBy");
      long[] s = new long[started.size()];
      String[] a = new String[by.size()];
      for (int i = 0; i < s.length; i++) {
        s[i] = started.get(i).getAsLong();
        int k = by.get(i).getAsInt();
        a[i] = k < 0 ? null : servers.get(k);
      }
      List<String> errors = new ArrayList<>();
      json.getAsJsonArray("errors").forEach(e -> errors.add(e.getAsString()));
      return new Calls(json.get("transport").getAsString(), s, a, errors);
    }
  }
}
