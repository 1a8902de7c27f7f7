package io.steelyard.testkit.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.grpc.EquivalentAddressGroup;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.LoadBalancerRegistry;
import io.grpc.ManagedChannel;
import io.grpc.NameResolverRegistry;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The static resolver and the recording policy through a real channel (which never connects). */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class GrpcFixturesTest {

  private static final List<EquivalentAddressGroup> ENDPOINTS =
      List.of(
          new EquivalentAddressGroup(new InetSocketAddress("127.0.0.1", 7001)),
          new EquivalentAddressGroup(new InetSocketAddress("127.0.0.1", 7002)));

  @Test
  void theRecordingPolicySeesWhatTheStaticResolverServes() throws InterruptedException {
    List<String> heard = new CopyOnWriteArrayList<>();
    try (StaticResolverProvider resolver = StaticResolverProvider.register("fixtures-static");
        RecordingLoadBalancerProvider recording =
            RecordingLoadBalancerProvider.register(
                "fixtures_recording", (authority, eags) -> heard.add(authority + " " + eags.size()))) {
      ManagedChannel channel =
          Grpc.newChannelBuilder(resolver.target("svc", ENDPOINTS), InsecureChannelCredentials.create())
              .defaultLoadBalancingPolicy(recording.getPolicyName())
              .build();
      try {
        channel.getState(true);

        await().atMost(Duration.ofSeconds(10)).until(() -> recording.latest("localhost", 0) != null);
        assertThat(recording.latest("localhost", 0)).containsExactlyElementsOf(ENDPOINTS);
        assertThat(recording.recorders("localhost").get(0).errors()).isEmpty();
        assertThat(heard).containsExactly("localhost 2");
      } finally {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }

  @Test
  void anUpdateReachesTheRunningResolverOfThatNameOnly() throws InterruptedException {
    try (StaticResolverProvider resolver = StaticResolverProvider.register("fixtures-update");
        RecordingLoadBalancerProvider recording =
            RecordingLoadBalancerProvider.register("fixtures_update")) {
      ManagedChannel updated = channel(resolver.target("updated", ENDPOINTS), recording);
      ManagedChannel other = channel(resolver.target("other", ENDPOINTS), recording);
      try {
        await().atMost(Duration.ofSeconds(10)).until(() ->
            recording.latest("localhost", 0) != null && recording.latest("localhost", 1) != null);

        resolver.update("updated", ENDPOINTS.subList(1, 2));

        await().atMost(Duration.ofSeconds(10)).until(() ->
            recording.recorders("localhost").stream().anyMatch(r -> r.updates().size() == 2));
        assertThat(recording.recorders("localhost"))
            .extracting(r -> r.updates().get(r.updates().size() - 1))
            .containsExactlyInAnyOrder(ENDPOINTS, ENDPOINTS.subList(1, 2));
        assertThat(recording.recorders("localhost"))
            .extracting(r -> r.updates().size())
            .containsExactlyInAnyOrder(1, 2);
      } finally {
        updated.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        other.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
      }
    }
  }

  @Test
  void updatingANameNeverRegisteredIsAnError() {
    try (StaticResolverProvider resolver = StaticResolverProvider.register("fixtures-unknown")) {
      assertThatThrownBy(() -> resolver.update("nobody", ENDPOINTS))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("name: nobody (expected: registered with target())");
    }
  }

  private static ManagedChannel channel(String target, RecordingLoadBalancerProvider policy) {
    ManagedChannel channel = Grpc.newChannelBuilder(target, InsecureChannelCredentials.create())
        .defaultLoadBalancingPolicy(policy.getPolicyName())
        .build();
    channel.getState(true);
    return channel;
  }

  @Test
  void closingDeregistersBothProviders() {
    StaticResolverProvider resolver = StaticResolverProvider.register("fixtures-closed");
    RecordingLoadBalancerProvider recording = RecordingLoadBalancerProvider.register("fixtures_closed");

    resolver.close();
    recording.close();

    assertThat(NameResolverRegistry.getDefaultRegistry().getProviderForScheme("fixtures-closed")).isNull();
    assertThat(LoadBalancerRegistry.getDefaultRegistry().getProvider("fixtures_closed")).isNull();
  }

  @Test
  void aTargetWithoutASchemeStaysWithDns() {
    try (StaticResolverProvider resolver = StaticResolverProvider.register("fixtures-default")) {
      assertThat(NameResolverRegistry.getDefaultRegistry().getDefaultScheme()).isEqualTo("dns");
    }
  }
}
