package io.steelyard.testkit;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * etcd's gRPC proxy ({@code etcd grpc-proxy start}, the same binary as the members) on a free
 * loopback port, in front of a running {@link EtcdCluster}. Clients use {@link #endpoint()} as
 * they would a member's; the proxy coalesces their watches and lease keepalives into one stream
 * each towards etcd (etcd's docs, "gRPC proxy").
 *
 * <pre>{@code
 * try (EtcdGrpcProxy proxy = EtcdGrpcProxy.start(etcd)) {
 *   EtcdConnection through = EtcdConnection.of(proxy.endpoint());
 * }
 * }</pre>
 *
 * <p>Plain HTTP only (no TLS towards the cluster or its clients). Like a member, the proxy is
 * started under the members' watchdog, so it dies within a second of this JVM even on SIGKILL.
 */
public final class EtcdGrpcProxy implements AutoCloseable {

  private static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);

  private final Path dir;
  private final URI endpoint;
  private final Process watchdog;
  private final ProcessHandle proxy;

  private EtcdGrpcProxy(Path dir, URI endpoint, Process watchdog, ProcessHandle proxy) {
    this.dir = dir;
    this.endpoint = endpoint;
    this.watchdog = watchdog;
    this.proxy = proxy;
  }

  /** Starts a proxy in front of every member of {@code cluster} and waits until it serves. */
  public static EtcdGrpcProxy start(EtcdCluster cluster, String... extraArgs) {
    List<String> members = new ArrayList<>();
    for (URI member : cluster.clientEndpoints()) {
      if (!"http".equals(member.getScheme())) {
        throw new IllegalArgumentException("EtcdGrpcProxy: plain-HTTP clusters only, not " + member);
      }
      members.add(member.getRawAuthority());
    }
    Path binary = BinaryClusterBackend.resolveBinary(null);
    int port = FreePorts.one();
    URI endpoint = URI.create("http://127.0.0.1:" + port);
    Path dir;
    try {
      dir = Files.createTempDirectory("steelyard-grpc-proxy");
    } catch (IOException e) {
      throw new UncheckedIOException("EtcdGrpcProxy: no temp directory", e);
    }
    Path log = dir.resolve("proxy.log");
    List<String> command = new ArrayList<>(List.of(
        "/bin/sh", "-c", BinaryMember.WATCHDOG, "steelyard-etcd-watchdog",
        Long.toString(ProcessHandle.current().pid()), log.toString(), dir.resolve("data").toString(),
        binary.toString(), "grpc-proxy", "start",
        "--endpoints=" + String.join(",", members),
        "--listen-addr=127.0.0.1:" + port,
        "--advertise-client-url=127.0.0.1:" + port,
        "--data-dir=" + dir.resolve("data")));
    command.addAll(List.of(extraArgs));
    ProcessBuilder builder = new ProcessBuilder(command).directory(dir.toFile());
    builder.environment().keySet().removeIf(key -> key.startsWith("ETCD_") || key.startsWith("ETCDCTL_"));
    builder.redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()));
    Process watchdog;
    long pid;
    try {
      watchdog = builder.start();
      watchdog.getOutputStream().close();
      try (BufferedReader out =
          new BufferedReader(new InputStreamReader(watchdog.getInputStream(), StandardCharsets.US_ASCII))) {
        String line = out.readLine();
        if (line == null) {
          throw new IllegalStateException("EtcdGrpcProxy: the watchdog exited before starting it" + tail(log));
        }
        pid = Long.parseLong(line.trim());
      }
    } catch (IOException e) {
      throw new UncheckedIOException("EtcdGrpcProxy: cannot start " + binary, e);
    }
    ProcessHandle handle = ProcessHandle.of(pid).orElse(null);
    EtcdGrpcProxy started = new EtcdGrpcProxy(dir, endpoint, watchdog, handle);
    try {
      // The proxy serves /health on its client port, answered through to the cluster.
      EtcdHttp.await("etcd grpc-proxy at " + endpoint, () -> EtcdHttp.isHealthy(endpoint),
          () -> handle != null && handle.isAlive(), BinaryMember.START_TIMEOUT, () -> tail(log));
    } catch (RuntimeException e) {
      started.close();
      throw e;
    }
    return started;
  }

  /** {@code http://127.0.0.1:PORT}: what clients give as their etcd endpoint. */
  public String endpoint() {
    return endpoint.toString();
  }

  /** The proxy's process id, if it is running. */
  public Optional<Long> pid() {
    return proxy != null && proxy.isAlive() ? Optional.of(proxy.pid()) : Optional.empty();
  }

  /** Stops the proxy (SIGTERM, then SIGKILL after 10 s); idempotent. */
  @Override
  public void close() {
    if (proxy != null && proxy.isAlive()) {
      proxy.destroy();
      try {
        proxy.onExit().get(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
      } catch (Exception e) {
        proxy.destroyForcibly();
      }
    }
    try {
      watchdog.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    try (var files = Files.walk(dir)) {
      files.sorted((a, b) -> b.getNameCount() - a.getNameCount()).forEach(p -> p.toFile().delete());
    } catch (IOException | UncheckedIOException ignored) {
      // a temp directory left behind is harmless
    }
  }

  @Override
  public String toString() {
    return "etcd grpc-proxy@" + endpoint;
  }

  private static String tail(Path log) {
    try {
      List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
      return "; last lines of " + log + ":\n"
          + String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
    } catch (IOException | UncheckedIOException e) {
      return "; no log at " + log;
    }
  }
}
