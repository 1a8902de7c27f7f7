package io.steelyard.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.steelyard.examples.proto.GreeterGrpc;
import io.steelyard.examples.proto.HelloRequest;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The server without etcd ({@code register(false)}): what it answers and how it stops. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class GreeterServerTest {

  @Test
  void unregisteredServerRepliesWithItsAddressAndIsHealthy() throws Exception {
    GreeterServer server =
        GreeterServer.builder().register(false).drainDelay(Duration.ZERO).build().start();
    // A bare host:port on purpose: with discovery-client on the classpath it must still go to DNS
    // (the etcd provider's priority stays below DNS's).
    ManagedChannel channel =
        ManagedChannelBuilder.forTarget(server.address()).usePlaintext().build();
    try {
      assertThat(server.address()).startsWith("127.0.0.1:");
      assertThat(
              GreeterGrpc.newBlockingStub(channel)
                  .sayHello(HelloRequest.newBuilder().setName("test").build())
                  .getServerAddress())
          .isEqualTo(server.address());
      assertThat(
              HealthGrpc.newBlockingStub(channel)
                  .check(HealthCheckRequest.newBuilder().setService(GreeterGrpc.SERVICE_NAME).build())
                  .getStatus())
          .isEqualTo(ServingStatus.SERVING);
      assertThat(server.callsServed()).isEqualTo(1);
      assertThat(server.connectionsAccepted()).isEqualTo(1);
    } finally {
      channel.shutdownNow();
      server.close();
    }
    assertThat(server.isClosing()).isTrue();
  }

  @Test
  void weightCannotChangeWithoutARegistration() {
    GreeterServer server =
        GreeterServer.builder().register(false).drainDelay(Duration.ZERO).build().start();
    try {
      assertThatThrownBy(() -> server.setWeight(3)).hasMessageContaining("not registered");
    } finally {
      server.close();
    }
  }

  @Test
  void badSettingsAreRefusedWithTheOffendingValue() {
    assertThatThrownBy(() -> GreeterServer.builder().service("../x")).hasMessageContaining("../x");
    assertThatThrownBy(() -> GreeterServer.builder().weight(-1)).hasMessageContaining("-1");
    assertThatThrownBy(() -> GreeterServer.builder().ttl(Duration.ofSeconds(1))).hasMessageContaining("ttl");
  }

  @Test
  void aSettingGivenTwiceIsRefused() {
    GreeterServer.Builder server = GreeterServer.builder().weight(2);
    assertThatThrownBy(() -> server.weight(3))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("weight already set");
    GreeterClient.Builder client = GreeterClient.builder("http://127.0.0.1:1", "greeter").retry(false);
    assertThatThrownBy(() -> client.retry(true)).hasMessage("retry already set");
  }
}
