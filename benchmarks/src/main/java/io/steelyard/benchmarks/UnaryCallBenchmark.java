package io.steelyard.benchmarks;

import io.grpc.CallOptions;
import io.grpc.EquivalentAddressGroup;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.testkit.grpc.StaticResolverProvider;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Unary calls per second through a real channel and each policy to three Netty servers on
 * loopback (weights 1, 2, 5 for the weighted policies), in the same JVM. The figure of merit is
 * the ratio to {@code round_robin}.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 2)
@Fork(1)
@Threads(4)
@State(Scope.Benchmark)
public class UnaryCallBenchmark {

  private static final byte[] PAYLOAD = new byte[16];

  @Param({"round_robin", "weighted_random", "weighted_round_robin_static"})
  public String policy;

  private final List<Server> servers = new ArrayList<>();
  private ManagedChannel channel;
  private StaticResolverProvider resolver;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    List<EquivalentAddressGroup> endpoints = new ArrayList<>();
    int[] weights = {1, 2, 5};
    for (int weight : weights) {
      Server server =
          NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
              .addService(Echo.service())
              .build()
              .start();
      servers.add(server);
      endpoints.add(
          EndpointWeights.withWeight(
              new EquivalentAddressGroup(server.getListenSockets().get(0)), weight));
    }
    resolver = StaticResolverProvider.register("bench-static");
    channel =
        Grpc.newChannelBuilder(resolver.target("echo", endpoints), InsecureChannelCredentials.create())
            .defaultServiceConfig(Map.of("loadBalancingConfig", List.of(Map.of(policy, Map.of()))))
            .build();
    call();
  }

  @TearDown(Level.Trial)
  public void tearDown() throws InterruptedException {
    channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    for (Server server : servers) {
      server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    resolver.close();
  }

  @Benchmark
  public byte[] call() {
    return ClientCalls.blockingUnaryCall(channel, Echo.METHOD, CallOptions.DEFAULT, PAYLOAD);
  }
}
