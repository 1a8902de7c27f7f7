package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The server's call meters count each closed call by method and status, and time it. */
class ServerCallMetersTest {

  private static final String CHECK = "grpc.health.v1.Health/Check";

  private final MeterRegistry meters = new SimpleMeterRegistry();
  private Server server;
  private ManagedChannel channel;

  @AfterEach
  void stop() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  @Test
  void callsAreCountedByMethodAndStatusAndTimed() throws Exception {
    HealthStatusManager health = new HealthStatusManager();
    health.setStatus("known", io.grpc.health.v1.HealthCheckResponse.ServingStatus.SERVING);
    String name = InProcessServerBuilder.generateName();
    server = InProcessServerBuilder.forName(name)
        .addService(health.getHealthService())
        .addStreamTracerFactory(AgentMetrics.of(meters).serverCalls("greeter"))
        .build().start();
    channel = InProcessChannelBuilder.forName(name).build();
    HealthGrpc.HealthBlockingStub stub = HealthGrpc.newBlockingStub(channel);

    stub.check(HealthCheckRequest.newBuilder().setService("known").build());
    stub.check(HealthCheckRequest.newBuilder().setService("known").build());
    assertThatThrownBy(() -> stub.check(HealthCheckRequest.newBuilder().setService("other").build()))
        .isInstanceOf(StatusRuntimeException.class);

    assertThat(count(Status.Code.OK)).isEqualTo(2);
    assertThat(count(Status.Code.NOT_FOUND)).isEqualTo(1);
    Timer timer = meters.get(AgentMetrics.SERVER_CALL_DURATION)
        .tags("service", "greeter", "method", CHECK).timer();
    assertThat(timer.count()).isEqualTo(3);
    assertThat(timer.totalTime(TimeUnit.NANOSECONDS)).isPositive();
  }

  private double count(Status.Code code) {
    return meters.get(AgentMetrics.SERVER_CALLS)
        .tags("service", "greeter", "method", CHECK, "status", code.name()).counter().count();
  }
}
