package io.steelyard.balancer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.grpc.CallOptions;
import io.grpc.EquivalentAddressGroup;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.InsecureServerCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.stub.ClientCalls;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.testkit.grpc.CapacityBackend;
import io.steelyard.testkit.grpc.StaticResolverProvider;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * weighted_least_request against real Netty servers whose capacity is modelled ({@link
 * CapacityBackend}: workers × service time, a queue), under an open-loop load. Bounds are
 * generous: the capacity benchmark measures the same situations precisely.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class WeightedLeastRequestIntegrationTest {

  private static StaticResolverProvider resolver;

  private final ScheduledExecutorService timers = Executors.newScheduledThreadPool(2);
  private final List<CapacityBackend> backends = new ArrayList<>();
  private final List<Server> servers = new ArrayList<>();
  private ManagedChannel channel;

  @BeforeAll
  static void registerResolver() {
    resolver = StaticResolverProvider.register("static-wlr");
  }

  @AfterAll
  static void deregisterResolver() {
    resolver.close();
  }

  @AfterEach
  void stop() throws InterruptedException {
    timers.shutdownNow();
    if (channel != null) {
      channel.shutdownNow();
      channel.awaitTermination(5, TimeUnit.SECONDS);
    }
    for (Server server : servers) {
      server.shutdownNow();
    }
    for (Server server : servers) {
      server.awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  /**
   * Starts one backend per entry of {@code workers}, each call taking {@code serviceTime} on
   * average; returns their endpoints, all of weight 1.
   */
  private List<EquivalentAddressGroup> start(Duration serviceTime, int... workers) throws Exception {
    List<EquivalentAddressGroup> endpoints = new ArrayList<>();
    for (int i = 0; i < workers.length; i++) {
      CapacityBackend backend =
          new CapacityBackend("s" + i, workers[i], serviceTime, timers, new Random(i));
      Server server =
          Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create())
              .addService(backend.service())
              .build()
              .start();
      backends.add(backend);
      servers.add(server);
      InetSocketAddress address =
          new InetSocketAddress(InetAddress.getLoopbackAddress(), server.getPort());
      endpoints.add(EndpointWeights.withWeight(new EquivalentAddressGroup(address), 1));
    }
    return endpoints;
  }

  private void connect(String name, List<EquivalentAddressGroup> endpoints) {
    channel =
        Grpc.newChannelBuilder(resolver.target(name, endpoints), InsecureChannelCredentials.create())
            .defaultServiceConfig(
                Map.of("loadBalancingConfig", List.of(Map.of("weighted_least_request", Map.of()))))
            .build();
    // Generous: on a busy machine the first call also waits for class loading and connections.
    ClientCalls.blockingUnaryCall(
        channel, CapacityBackend.METHOD, CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS), "");
  }

  /** Fires {@code callsPerTick} calls every {@code tickMillis} without waiting (open loop). */
  private void openLoop(int callsPerTick, int tickMillis) {
    timers.scheduleAtFixedRate(
        () -> {
          for (int i = 0; i < callsPerTick; i++) {
            ClientCalls.futureUnaryCall(
                channel.newCall(
                    CapacityBackend.METHOD, CallOptions.DEFAULT.withDeadlineAfter(2, TimeUnit.SECONDS)),
                "");
          }
        },
        0,
        tickMillis,
        TimeUnit.MILLISECONDS);
  }

  private long[] arrivals() {
    long[] counts = new long[backends.size()];
    for (int i = 0; i < counts.length; i++) {
      counts[i] = backends.get(i).arrivals();
    }
    return counts;
  }

  /** Share of backend {@code index} in the arrivals between two snapshots. */
  private static double share(long[] before, long[] after, int index) {
    long total = 0;
    for (int i = 0; i < after.length; i++) {
      total += after[i] - before[i];
    }
    return total == 0 ? Double.NaN : (after[index] - before[index]) / (double) total;
  }

  @Test
  void mostTrafficLeavesAServerThatSlowsDownFivefoldWithinFiveSeconds() throws Exception {
    // Three servers of 4 workers x 50 ms (80 calls/s each); 125 calls/s offered. Service times
    // are long so that a starved test machine's scheduling delays (tens of ms, the same on every
    // server) do not blur the slow server's difference.
    connect("degrade", start(Duration.ofMillis(50), 4, 4, 4));
    openLoop(1, 8);
    long[] warm = arrivals();
    await().pollDelay(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(5)).until(() -> true);
    assertThat(share(warm, arrivals(), 0)).as("share before the slowdown").isBetween(0.2, 0.47);

    backends.get(0).setSlowdown(5); // now 16 calls/s: it can take at most 16 / 125 = 0.13
    long[][] window = {arrivals()};

    await()
        .atMost(Duration.ofSeconds(5))
        .pollInterval(Duration.ofMillis(500))
        .until(
            () -> {
              long[] now = arrivals();
              double share = share(window[0], now, 0);
              window[0] = now;
              return share < 1 / 6.0;
            });
  }

  @Test
  void withEqualWeightsAServerOfAQuarterCapacityGetsAClearlySmallerShare() throws Exception {
    // 4, 4 and 1 workers x 40 ms: 100, 100 and 25 calls/s; 143 calls/s offered (64 %).
    connect("quarter", start(Duration.ofMillis(40), 4, 4, 1));
    openLoop(1, 7);
    await().pollDelay(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(3)).until(() -> true);
    long[] before = arrivals();
    await().pollDelay(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(4)).until(() -> true);
    long[] after = arrivals();

    // Round robin would give it 1/3 and a growing queue; it can serve about 25 / 143 = 0.17.
    assertThat(share(before, after, 2)).isLessThan(0.25);
    assertThat(share(before, after, 0)).isGreaterThan(0.36);
    assertThat(share(before, after, 1)).isGreaterThan(0.36);
  }
}
