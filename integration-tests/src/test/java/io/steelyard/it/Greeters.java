package io.steelyard.it;

import io.steelyard.examples.GreeterServer;
import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** In-process greeter servers of one test, closed together. */
final class Greeters implements AutoCloseable {

  private final String endpoints;
  private final String service;
  private final List<GreeterServer> servers = new ArrayList<>();

  Greeters(String endpoints, String service) {
    this.endpoints = endpoints;
    this.service = service;
  }

  /** A registered server on any free port. */
  GreeterServer start(int weight) {
    return start(weight, 0);
  }

  /** A registered server on {@code port} (0 = any). */
  GreeterServer start(int weight, int port) {
    return add(builder().weight(weight).port(port).build().start());
  }

  /** A server configured like the others, for the caller to adjust and start. */
  GreeterServer.Builder builder() {
    return GreeterServer.builder()
        .endpoints(endpoints)
        .service(service)
        .ttl(Duration.ofSeconds(5))
        .drainDelay(Duration.ofMillis(500))
        .grace(Duration.ofSeconds(5));
  }

  GreeterServer add(GreeterServer server) {
    synchronized (servers) {
      servers.add(server);
    }
    return server;
  }

  /** A loopback port nothing listens on (right now). */
  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /**
   * A free port below Linux's ephemeral range (32768 and up), for a server that restarts on its
   * own port: a port from the ephemeral range, released for the restart, can meanwhile become the
   * local port of any outgoing connection on the machine, and the restart then fails to bind.
   */
  static int freePortToRestartOn() throws IOException {
    java.util.Random random = new java.util.Random();
    for (int attempt = 0; attempt < 100; attempt++) {
      int port = 20_000 + random.nextInt(12_000);
      try (ServerSocket s = new ServerSocket(port, 50, java.net.InetAddress.getLoopbackAddress())) {
        return s.getLocalPort();
      } catch (IOException taken) {
        // try another
      }
    }
    throw new IOException("no free port in 20000..31999 after 100 attempts");
  }

  @Override
  public void close() {
    synchronized (servers) {
      servers.forEach(GreeterServer::shutdownNow);
      servers.clear();
    }
  }
}
