package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.common.net.HostAndPort;
import com.google.common.net.InetAddresses;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.admin.InstanceStore;
import io.steelyard.testkit.EtcdCluster;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A real server registered with {@code server(...)} instead of a hand-written address: the key
 * in etcd names the server's port and a host of this machine that reaches it.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AdvertisedAddressIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  @RegisterExtension
  @Order(EtcdProbe.AFTER_THE_CLUSTER)
  static final EtcdProbe probe = EtcdProbe.of(etcd);

  private static InstanceStore store;

  @BeforeAll
  static void connect() {
    store = new InstanceStore(probe.client, KeyLayout.defaults(), Duration.ofSeconds(5));
  }

  @Test
  void aServerOnEveryAddressIsRegisteredAtOneOfThisMachinesAddressesThatReachesIt() throws Exception {
    HealthStatusManager health = new HealthStatusManager();
    Server server = NettyServerBuilder.forPort(0).addService(health.getHealthService()).build().start();
    int port = ((InetSocketAddress) server.getListenSockets().get(0)).getPort();
    try (ServiceRegistration reg =
        builder("detected").server(server).build()) {
      reg.start().get(30, TimeUnit.SECONDS);

      assertThat(store.list("detected", false)).extracting(i -> i.acceptedOrThrow().address()).containsExactly(reg.address());
      assertThat(reg.address()).as("no interface name of this machine").doesNotContain("%");
      HostAndPort registered = HostAndPort.fromString(reg.address());
      assertThat(registered.getPort()).isEqualTo(port);
      InetAddress host = InetAddresses.forString(registered.getHost());
      List<InetAddress> nonLoopback = nonLoopbackAddresses();
      if (nonLoopback.isEmpty()) {
        assertThat(host.isLoopbackAddress()).as("%s on a machine without a network", host).isTrue();
      } else {
        assertThat(nonLoopback).as("this machine's addresses").contains(host);
      }
      assertThat(healthAt(reg.address())).isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
    } finally {
      server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
    }
  }

  @Test
  void aServerBoundToOneAddressIsRegisteredAtIt() throws Exception {
    HealthStatusManager health = new HealthStatusManager();
    Server server = NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
        .addService(health.getHealthService())
        .build()
        .start();
    int port = ((InetSocketAddress) server.getListenSockets().get(0)).getPort();
    try (ServiceRegistration reg =
        builder("bound").server(server).build()) {
      reg.start().get(30, TimeUnit.SECONDS);

      assertThat(reg.address()).isEqualTo("127.0.0.1:" + port);
      assertThat(store.list("bound", false)).extracting(i -> i.acceptedOrThrow().address()).containsExactly(reg.address());
      assertThat(healthAt(reg.address())).isEqualTo(HealthCheckResponse.ServingStatus.SERVING);
    } finally {
      server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
    }
  }

  /**
   * A registration whose address rule sees an empty environment: a runner that sets {@value
   * AdvertisedAddress#DEFAULT_HOST_VARIABLE} does not change what the server registers.
   */
  private static ServiceRegistrationBuilder builder(String service) {
    return ServiceRegistration.builder(EtcdConnection.of(etcd.endpoints()), service)
        .addressRule(AdvertisedAddress.from(variable -> null));
  }

  private static HealthCheckResponse.ServingStatus healthAt(String address) throws InterruptedException {
    ManagedChannel channel = Grpc.newChannelBuilder(address, InsecureChannelCredentials.create()).build();
    try {
      return HealthGrpc.newBlockingStub(channel)
          .withDeadlineAfter(10, TimeUnit.SECONDS)
          .check(HealthCheckRequest.getDefaultInstance())
          .getStatus();
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  private static List<InetAddress> nonLoopbackAddresses() throws Exception {
    return Collections.list(NetworkInterface.getNetworkInterfaces()).stream()
        .filter(nic -> {
          try {
            return nic.isUp() && !nic.isLoopback();
          } catch (SocketException e) {
            return false;
          }
        })
        .flatMap(nic -> Collections.list(nic.getInetAddresses()).stream())
        .filter(a -> !a.isLinkLocalAddress())
        .toList();
  }
}
