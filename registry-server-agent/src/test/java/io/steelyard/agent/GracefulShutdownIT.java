package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.EquivalentAddressGroup;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.admin.InstanceStore;
import io.steelyard.registry.admin.InstanceWrite;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.grpc.StaticResolverProvider;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Two real servers behind a client with a static address list, round_robin and client-side health
 * checking; one of them shuts down through the agent while calls keep flowing. Zero calls may fail.
 *
 * <p>What makes that true: health NOT_SERVING reaches the client's health watch first, so the
 * balancer stops picking the server; the drain delay gives that time to arrive; {@code
 * server.shutdown()} then sends GOAWAY and lets calls already running finish, and grpc-java retries
 * transparently any call that raced with the GOAWAY before the server saw it. No retry policy is
 * configured, so nothing else masks a failure.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class GracefulShutdownIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private final List<RegisteredServer> servers = new ArrayList<>();
  private final List<AtomicLong> served = new ArrayList<>();
  private ManagedChannel channel;
  private StaticResolverProvider resolver;
  private ExecutorService callers;

  @AfterEach
  void tearDown() throws Exception {
    if (callers != null) {
      callers.shutdownNow();
      callers.awaitTermination(5, TimeUnit.SECONDS);
    }
    if (channel != null) {
      channel.shutdownNow();
    }
    if (resolver != null) {
      resolver.close();
    }
    for (RegisteredServer s : servers) {
      s.server().shutdownNow();
      s.registration().close();
    }
  }

  private RegisteredServer startServer(Duration drainDelay) throws Exception {
    HealthStatusManager health = new HealthStatusManager();
    AtomicLong count = new AtomicLong();
    served.add(count);
    Server server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .addService(
                ServerInterceptors.intercept(
                    health.getHealthService(),
                    new io.grpc.ServerInterceptor() {
                      @Override
                      public <ReqT, RespT> io.grpc.ServerCall.Listener<ReqT> interceptCall(
                          io.grpc.ServerCall<ReqT, RespT> call,
                          io.grpc.Metadata headers,
                          io.grpc.ServerCallHandler<ReqT, RespT> next) {
                        if (call.getMethodDescriptor().equals(HealthGrpc.getCheckMethod())) {
                          count.incrementAndGet();
                        }
                        return next.startCall(call, headers);
                      }
                    }))
            .build()
            .start();
    String address = "127.0.0.1:" + server.getPort();
    ServiceRegistration reg =
        ServiceRegistration.builder(EtcdConnection.of(etcd.endpoints()), "graceful", address)
            .ttl(Duration.ofSeconds(5))
            .build();
    RegisteredServer rs =
        RegisteredServer.builder(server, reg)
            .health(health)
            .drainDelay(drainDelay)
            .gracePeriod(Duration.ofSeconds(5))
            .build()
            .start();
    servers.add(rs);
    return rs;
  }

  @Test
  void gracefulShutdownUnderSteadyCallsFailsNoCall() throws Exception {
    RegisteredServer a = startServer(Duration.ofSeconds(1));
    RegisteredServer b = startServer(Duration.ofSeconds(1));
    a.registration().registered().get(10, TimeUnit.SECONDS);
    b.registration().registered().get(10, TimeUnit.SECONDS);

    resolver = StaticResolverProvider.register("graceful-static");
    String target =
        resolver.target(
            "both",
            List.of(
                new EquivalentAddressGroup(new InetSocketAddress("127.0.0.1", a.server().getPort())),
                new EquivalentAddressGroup(new InetSocketAddress("127.0.0.1", b.server().getPort()))));
    channel =
        ManagedChannelBuilder.forTarget(target)
            .usePlaintext()
            .defaultServiceConfig(
                Map.of(
                    "loadBalancingConfig", List.of(Map.of("round_robin", Map.of())),
                    "healthCheckConfig", Map.of("serviceName", "")))
            .build();

    AtomicBoolean running = new AtomicBoolean(true);
    AtomicInteger ok = new AtomicInteger();
    ConcurrentLinkedQueue<Status> failures = new ConcurrentLinkedQueue<>();
    int threads = 4;
    callers = Executors.newFixedThreadPool(threads);
    for (int i = 0; i < threads; i++) {
      callers.execute(
          () -> {
            HealthGrpc.HealthBlockingStub stub = HealthGrpc.newBlockingStub(channel);
            while (running.get()) {
              try {
                stub.withDeadlineAfter(5, TimeUnit.SECONDS)
                    .check(HealthCheckRequest.newBuilder().setService("").build());
                ok.incrementAndGet();
              } catch (StatusRuntimeException e) {
                failures.add(e.getStatus());
              }
            }
          });
    }
    // Steady traffic on both servers first.
    await().atMost(Duration.ofSeconds(10))
        .until(() -> served.get(0).get() > 100 && served.get(1).get() > 100);
    // Calls A has started, half-way through the drain delay (A's health went NOT_SERVING just
    // before its registration closed).
    CompletableFuture<Long> aMidDrain = new CompletableFuture<>();
    a.registration().addListener(state -> {
      if (state == RegistrationState.CLOSED) {
        CompletableFuture.delayedExecutor(500, TimeUnit.MILLISECONDS)
            .execute(() -> aMidDrain.complete(served.get(0).get()));
      }
    });

    boolean graceful = a.shutdown();

    long bAfterShutdown = served.get(1).get();
    await().atMost(Duration.ofSeconds(5)).until(() -> served.get(1).get() > bAfterShutdown + 200);
    running.set(false);
    callers.shutdown();
    assertThat(callers.awaitTermination(10, TimeUnit.SECONDS)).isTrue();

    assertThat(failures).as("failed calls").isEmpty();
    // Client-side health checking had already moved every new call to B before GOAWAY.
    assertThat(served.get(0).get()).as("calls started on A after mid-drain")
        .isEqualTo(aMidDrain.get(1, TimeUnit.SECONDS));
    assertThat(ok.get()).isGreaterThan(400);
    assertThat(graceful).isTrue();
    assertThat(a.server().isTerminated()).isTrue();
    assertThat(a.registration().state()).isEqualTo(RegistrationState.CLOSED);
    try (EtcdProbe probe = new EtcdProbe(etcd.clientEndpoints())) {
      assertThat(probe.get(a.registration().key())).isEmpty();
      assertThat(probe.get(b.registration().key())).isPresent();
    }
  }

  @Test
  void healthIsServingOnlyWhileRegistered() throws Exception {
    RegisteredServer s = startServer(Duration.ZERO);
    s.registration().registered().get(10, TimeUnit.SECONDS);
    ManagedChannel direct =
        ManagedChannelBuilder.forAddress("127.0.0.1", s.server().getPort()).usePlaintext().build();
    try {
      HealthGrpc.HealthBlockingStub stub = HealthGrpc.newBlockingStub(direct);
      await().atMost(Duration.ofSeconds(2))
          .until(() -> status(stub, "") == ServingStatus.SERVING
              && status(stub, "graceful") == ServingStatus.SERVING);

      try (EtcdProbe probe = new EtcdProbe(etcd.clientEndpoints())) {
        new InstanceStore(probe.client, io.steelyard.registry.KeyLayout.defaults(),
            Duration.ofSeconds(5))
            .apply(InstanceWrite.deregister("graceful", s.registration().address()));
      }

      await().atMost(Duration.ofSeconds(3))
          .until(() -> status(stub, "") == ServingStatus.NOT_SERVING);
      assertThat(s.registration().state()).isEqualTo(RegistrationState.DELETED_BY_OPERATOR);

      s.registration().reregister().get(5, TimeUnit.SECONDS);
      await().atMost(Duration.ofSeconds(2)).until(() -> status(stub, "") == ServingStatus.SERVING);
    } finally {
      direct.shutdownNow();
    }
  }

  private static ServingStatus status(HealthGrpc.HealthBlockingStub stub, String service) {
    return stub.withDeadlineAfter(2, TimeUnit.SECONDS)
        .check(HealthCheckRequest.newBuilder().setService(service).build())
        .getStatus();
  }
}
