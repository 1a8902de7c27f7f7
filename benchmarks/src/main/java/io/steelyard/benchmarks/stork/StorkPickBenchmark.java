package io.steelyard.benchmarks.stork;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.smallrye.stork.Stork;
import io.smallrye.stork.api.LoadBalancer;
import io.smallrye.stork.api.Service;
import io.smallrye.stork.api.ServiceDefinition;
import io.smallrye.stork.api.ServiceInstance;
import io.smallrye.stork.api.config.ConfigWithType;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.stork.SteelyardConfiguration;
import io.steelyard.stork.SteelyardWeightedConfiguration;
import io.steelyard.testkit.EtcdCluster;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * What one Stork pick costs: {@code steelyard-weighted} beside Stork's own {@code round-robin},
 * both over the {@code steelyard} discovery of a real etcd holding {@code n} instances (weights 1
 * to 5). {@code candidates=discovery-list} hands the balancer the discovery's own list, as
 * Quarkus's REST client does on every call; {@code cached-copy} a copy of it, as Quarkus's gRPC
 * client hands in the list of its last resolution, which steelyard-weighted then matches against
 * the live view.
 *
 * <pre>
 * java -jar benchmarks/target/benchmarks.jar 'StorkPickBenchmark' -f 1 -wi 2 -i 3 -w 1s -r 1s -prof gc
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class StorkPickBenchmark {

  @Param({"10", "100"})
  int n;

  @Param({"steelyard-weighted", "round-robin"})
  String lb;

  @Param({"discovery-list", "cached-copy"})
  String candidates;

  private EtcdCluster etcd;
  private Stork stork;
  private LoadBalancer balancer;
  private List<ServiceInstance> list;

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    etcd = EtcdCluster.builder().build();
    etcd.start();
    try (Client client = EtcdConnection.of(etcd.endpoints()).connect()) {
      for (int i = 0; i < n; i++) {
        String address = "10.0." + (i / 250) + "." + (i % 250 + 1) + ":8080";
        client.getKVClient().put(bytes("/services/bench/" + address), bytes(address + "|" + (1 + i % 5)))
            .get(10, TimeUnit.SECONDS);
      }
    }
    Stork.initialize();
    stork = Stork.getInstance();
    ConfigWithType balancerConfig = lb.equals("round-robin")
        ? new ConfigWithType() {
            @Override
            public String type() {
              return "round-robin";
            }

            @Override
            public Map<String, String> parameters() {
              return Map.of();
            }
          }
        : new SteelyardWeightedConfiguration(Map.of());
    stork.defineIfAbsent("bench", ServiceDefinition.of(
        new SteelyardConfiguration(Map.of("endpoints", etcd.endpoints())), balancerConfig));
    Service service = stork.getService("bench");
    list = service.getInstances().await().atMost(Duration.ofSeconds(30));
    if (list.size() != n) {
      throw new IllegalStateException("expected " + n + " instances, got " + list.size());
    }
    if (candidates.equals("cached-copy")) {
      list = new ArrayList<>(list);
    }
    balancer = service.getLoadBalancer();
  }

  @Benchmark
  public ServiceInstance pick() {
    return balancer.selectServiceInstance(list);
  }

  @TearDown(Level.Trial)
  public void tearDown() throws Exception {
    if (stork != null && stork.getService("bench").getServiceDiscovery() instanceof AutoCloseable c) {
      c.close();
    }
    Stork.shutdown();
    if (etcd != null) {
      etcd.close();
    }
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
