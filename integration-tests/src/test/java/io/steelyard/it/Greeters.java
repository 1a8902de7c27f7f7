package io.steelyard.it;

import io.steelyard.examples.GreeterServer;
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

  /**
   * A registered server on {@code port} (0 = any). A server that will restart on its port takes
   * one from {@link io.steelyard.testkit.FreePorts#one()}, below the range outgoing connections
   * take ports from.
   */
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

  @Override
  public void close() {
    synchronized (servers) {
      servers.forEach(GreeterServer::shutdownNow);
      servers.clear();
    }
  }
}
