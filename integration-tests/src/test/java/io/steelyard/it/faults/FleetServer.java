package io.steelyard.it.faults;

import io.grpc.Server;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.stub.StreamObserver;
import io.steelyard.agent.RegisteredServer;
import io.steelyard.agent.RegistrationState;
import io.steelyard.agent.ServiceRegistration;
import io.steelyard.examples.proto.GreeterGrpc;
import io.steelyard.examples.proto.HelloReply;
import io.steelyard.examples.proto.HelloRequest;
import io.steelyard.registry.EtcdConnection;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A greeter server with the embedded agent, wired as {@code examples/GreeterServer} wires it
 * ({@link ServiceRegistration} + {@link RegisteredServer} + health), but keeping the registration
 * in reach: "registered again" then means what the agent says, its state and the lease holding
 * the key, not merely that some key exists (an old lease brought back by a restarted etcd also
 * holds one, for a TTL).
 */
final class FleetServer {

  private final Server server;
  private final ServiceRegistration registration;
  private final RegisteredServer registered;
  private final String address;

  private FleetServer(Server server, ServiceRegistration registration, RegisteredServer registered, String address) {
    this.server = server;
    this.registration = registration;
    this.registered = registered;
    this.address = address;
  }

  /** Serves on a free loopback port and registers {@code service} at {@code weight}; returns once the key is in etcd. */
  static FleetServer start(String endpoints, String service, int weight, Duration ttl) {
    HealthStatusManager health = new HealthStatusManager();
    String[] self = new String[1];
    Server server;
    try {
      server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
          .addService(new GreeterGrpc.GreeterImplBase() {
            @Override
            public void sayHello(HelloRequest request, StreamObserver<HelloReply> out) {
              out.onNext(HelloReply.newBuilder().setMessage("Hello " + request.getName()).setServerAddress(self[0]).build());
              out.onCompleted();
            }
          })
          .addService(health.getHealthService())
          .build()
          .start();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    self[0] = "127.0.0.1:" + ((InetSocketAddress) server.getListenSockets().get(0)).getPort();
    ServiceRegistration registration =
        ServiceRegistration.builder(EtcdConnection.of(endpoints), service, self[0]).weight(weight).ttl(ttl).build();
    RegisteredServer registered =
        RegisteredServer.builder(server, registration)
            .health(health)
            .healthServiceNames(GreeterGrpc.SERVICE_NAME)
            .drainDelay(Duration.ofMillis(500))
            .gracePeriod(Duration.ofSeconds(2))
            .build();
    try {
      registered.start();
      registration.registered().get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      registration.close();
      server.shutdownNow();
      throw new IllegalStateException("cannot register " + self[0] + " as " + service, e);
    }
    return new FleetServer(server, registration, registered, self[0]);
  }

  String address() {
    return address;
  }

  int weight() {
    return registration.weight();
  }

  /**
   * Through the agent: same lease, guarded by the key's mod revision. The agent's answer: a
   * failure here (etcd not reachable yet) is retried by the agent, so it is logged, not fatal.
   */
  CompletableFuture<Void> setWeight(int weight) {
    return registration.setWeight(weight);
  }

  RegistrationState state() {
    return registration.state();
  }

  /** The lease the agent holds the key with; 0 unless registered. */
  long leaseId() {
    return registration.leaseId();
  }

  /** Deregisters and stops at once, for the end of a test. */
  void shutdownNow() {
    registration.close();
    server.shutdownNow();
  }

  /** The agent's graceful shutdown: NOT_SERVING, deregister, drain delay, shutdown, grace. */
  void shutdown() {
    registered.shutdown();
  }
}
