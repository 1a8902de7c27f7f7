package io.steelyard.balancer;

import io.grpc.EquivalentAddressGroup;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.stub.ServerCalls;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.testkit.grpc.CapacityBackend;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Real Netty gRPC servers on loopback, each answering {@code steelyard.test.Echo/Who} with its
 * own name and serving {@code grpc.health.v1} through a {@link HealthStatusManager}. A server set
 * {@linkplain #setFailing failing} answers every call with {@code UNAVAILABLE} whose description
 * is its name, while its health service still says SERVING (a server only calls reveal as bad).
 */
final class LoopbackCluster implements AutoCloseable {

  static final MethodDescriptor<String, String> WHO =
      MethodDescriptor.<String, String>newBuilder()
          .setType(MethodDescriptor.MethodType.UNARY)
          .setFullMethodName("steelyard.test.Echo/Who")
          .setRequestMarshaller(CapacityBackend.UTF8)
          .setResponseMarshaller(CapacityBackend.UTF8)
          .build();

  final List<String> names;
  final List<Server> servers = new ArrayList<>();
  final List<HealthStatusManager> health = new ArrayList<>();
  final List<InetSocketAddress> addresses = new ArrayList<>();
  final List<AtomicBoolean> failing = new ArrayList<>();

  LoopbackCluster(List<String> names) throws IOException {
    this.names = List.copyOf(names);
    for (String name : names) {
      HealthStatusManager manager = new HealthStatusManager();
      AtomicBoolean fails = new AtomicBoolean();
      ServerServiceDefinition echo =
          ServerServiceDefinition.builder("steelyard.test.Echo")
              .addMethod(
                  WHO,
                  ServerCalls.asyncUnaryCall(
                      (request, response) -> {
                        if (fails.get()) {
                          response.onError(
                              Status.UNAVAILABLE.withDescription(name).asRuntimeException());
                          return;
                        }
                        response.onNext(name);
                        response.onCompleted();
                      }))
              .build();
      Server server =
          NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
              .addService(echo)
              .addService(manager.getHealthService())
              .build()
              .start();
      servers.add(server);
      health.add(manager);
      failing.add(fails);
      addresses.add((InetSocketAddress) server.getListenSockets().get(0));
    }
  }

  /** One weighted endpoint per server, in server order. */
  List<EquivalentAddressGroup> endpoints(int... weights) {
    List<EquivalentAddressGroup> eags = new ArrayList<>();
    for (int i = 0; i < addresses.size(); i++) {
      eags.add(EndpointWeights.withWeight(new EquivalentAddressGroup(addresses.get(i)), weights[i]));
    }
    return eags;
  }

  void setServing(int server, ServingStatus status) {
    health.get(server).setStatus(HealthStatusManager.SERVICE_NAME_ALL_SERVICES, status);
  }

  /** Makes {@code server} fail (or stop failing) every call with {@code UNAVAILABLE}. */
  void setFailing(int server, boolean fails) {
    failing.get(server).set(fails);
  }

  @Override
  public void close() throws InterruptedException {
    for (Server server : servers) {
      server.shutdownNow();
    }
    for (Server server : servers) {
      server.awaitTermination(5, TimeUnit.SECONDS);
    }
  }
}
