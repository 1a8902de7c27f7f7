package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.stub.StreamObserver;
import io.steelyard.registry.EtcdConnection;
import java.io.IOException;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The order of {@link RegisteredServer#shutdown()}, with an in-process server and a registration
 * whose etcd is unreachable (it never registers; the shutdown order does not depend on etcd).
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class RegisteredServerTest {

  private final List<String> events = new CopyOnWriteArrayList<>();
  private final HealthStatusManager health = new HealthStatusManager();
  private final String name = InProcessServerBuilder.generateName();
  private ManagedChannel channel;
  private ServiceRegistration registration;
  private RecordingServer server;

  @AfterEach
  void tearDown() {
    if (channel != null) {
      channel.shutdownNow();
    }
    if (server != null) {
      server.delegate.shutdownNow();
    }
    if (registration != null) {
      registration.close();
    }
  }

  private RecordingServer server() {
    server =
        new RecordingServer(
            InProcessServerBuilder.forName(name)
                .directExecutor()
                .addService(health.getHealthService())
                .build());
    channel = InProcessChannelBuilder.forName(name).directExecutor().build();
    return server;
  }

  private ServiceRegistration registration() {
    registration =
        ServiceRegistration.builder(
                EtcdConnection.of("http://127.0.0.1:1"), "greeter", "127.0.0.1:50051")
            .operationTimeout(Duration.ofMillis(200))
            .closeTimeout(Duration.ofSeconds(1))
            .listener(s -> {
              if (s == RegistrationState.CLOSED) {
                events.add("registration closed, health " + healthOf(""));
              }
            })
            .build();
    return registration;
  }

  private ServingStatus healthOf(String service) {
    return HealthGrpc.newBlockingStub(channel)
        .withDeadlineAfter(2, TimeUnit.SECONDS)
        .check(HealthCheckRequest.newBuilder().setService(service).build())
        .getStatus();
  }

  @Test
  void startStartsAServerThatIsNotRunningYet() throws Exception {
    RegisteredServer rs = RegisteredServer.start(server(), health, registration());

    assertThat(events).containsExactly("start");
    assertThat(healthOf("")).isEqualTo(ServingStatus.NOT_SERVING); // not registered yet
    assertThat(rs.registration().state()).isIn(
        RegistrationState.NEW, RegistrationState.REGISTERING);
  }

  @Test
  void startAcceptsAServerAlreadyRunning() throws Exception {
    RecordingServer s = server();
    s.start();
    events.clear();

    RegisteredServer.start(s, health, registration());

    assertThat(events).isEmpty();
    assertThat(healthOf("greeter")).isEqualTo(ServingStatus.NOT_SERVING);
  }

  @Test
  void shutdownGoesNotServingThenDeregistersThenDrainsThenShutsTheServerDown() throws Exception {
    RegisteredServer rs =
        RegisteredServer.builder(server(), registration())
            .health(health)
            .drainDelay(Duration.ofMillis(300))
            .build()
            .start();
    events.clear();

    long t0 = System.nanoTime();
    assertThat(rs.shutdown()).isTrue();

    assertThat(events)
        .containsExactly(
            "registration closed, health NOT_SERVING", "shutdown", "awaitTermination");
    assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)).isGreaterThanOrEqualTo(300);
    assertThat(server.isTerminated()).isTrue();
    assertThat(rs.shutdown()).isTrue(); // idempotent
    assertThat(events).hasSize(3);
  }

  @Test
  void callsStillRunningAfterTheGracePeriodAreCancelled() throws Exception {
    RegisteredServer rs =
        RegisteredServer.builder(server(), registration())
            .health(health)
            .drainDelay(Duration.ZERO)
            .gracePeriod(Duration.ofMillis(200))
            .build()
            .start();
    // A health Watch never ends by itself: an in-flight call that outlives the grace period.
    List<Throwable> watchEnded = new CopyOnWriteArrayList<>();
    HealthGrpc.newStub(channel)
        .watch(
            HealthCheckRequest.getDefaultInstance(),
            new StreamObserver<HealthCheckResponse>() {
              @Override
              public void onNext(HealthCheckResponse r) {}

              @Override
              public void onError(Throwable t) {
                watchEnded.add(t);
              }

              @Override
              public void onCompleted() {}
            });
    events.clear();

    assertThat(rs.shutdown()).isFalse();

    assertThat(events).containsExactly(
        "registration closed, health NOT_SERVING", "shutdown", "awaitTermination", "shutdownNow");
  }

  @Test
  void deregisterAndDrainLeavesTheServerToAFrameworkThatStopsItItself() throws Exception {
    RecordingServer s = server();
    s.start();
    ServiceRegistration reg = registration();
    RegistrationHealth follower = RegistrationHealth.follow(health, reg, List.of());
    events.clear();

    assertThat(ShutdownSequence.of(reg, Duration.ZERO).deregisterAndDrain(follower)).isTrue();

    assertThat(events).containsExactly("registration closed, health NOT_SERVING");
    assertThat(s.isShutdown()).isFalse();
  }

  @Test
  void aNegativeDrainDelayOrGracePeriodIsRefused() {
    ServiceRegistration reg = registration();
    assertThatThrownBy(() -> ShutdownSequence.of(reg, Duration.ofMillis(-1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("drainDelay: PT-0.001S (expected: >= 0)");
    assertThatThrownBy(() -> RegisteredServer.builder(server(), reg).gracePeriod(Duration.ofSeconds(-1)))
        .hasMessage("gracePeriod: PT-1S (expected: >= 0)");
  }

  @Test
  void theBuilderRefusesASettingGivenTwice() {
    RegisteredServer.Builder b =
        RegisteredServer.builder(server(), registration()).drainDelay(Duration.ZERO).health(health);

    assertThatThrownBy(() -> b.drainDelay(Duration.ofSeconds(1)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("drainDelay already set");
    assertThatThrownBy(() -> b.health(new HealthStatusManager()))
        .hasMessage("health already set");
  }

  /** Records the lifecycle calls made on a real server. */
  private final class RecordingServer extends Server {
    final Server delegate;

    RecordingServer(Server delegate) {
      this.delegate = delegate;
    }

    @Override
    public Server start() throws IOException {
      events.add("start");
      delegate.start();
      return this;
    }

    @Override
    public int getPort() {
      return delegate.getPort();
    }

    @Override
    public List<? extends SocketAddress> getListenSockets() {
      return delegate.getListenSockets();
    }

    @Override
    public List<ServerServiceDefinition> getServices() {
      return delegate.getServices();
    }

    @Override
    public Server shutdown() {
      events.add("shutdown");
      delegate.shutdown();
      return this;
    }

    @Override
    public Server shutdownNow() {
      events.add("shutdownNow");
      delegate.shutdownNow();
      return this;
    }

    @Override
    public boolean isShutdown() {
      return delegate.isShutdown();
    }

    @Override
    public boolean isTerminated() {
      return delegate.isTerminated();
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
      events.add("awaitTermination");
      return delegate.awaitTermination(timeout, unit);
    }

    @Override
    public void awaitTermination() throws InterruptedException {
      delegate.awaitTermination();
    }
  }
}
