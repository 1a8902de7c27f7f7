package io.steelyard.stork;

import static io.steelyard.stork.StorkFixture.delete;
import static io.steelyard.stork.StorkFixture.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.smallrye.mutiny.Uni;
import io.smallrye.stork.api.Metadata;
import io.smallrye.stork.api.NoServiceInstanceFoundException;
import io.smallrye.stork.api.Service;
import io.smallrye.stork.api.ServiceDiscovery;
import io.smallrye.stork.api.ServiceInstance;
import io.smallrye.stork.impl.DefaultServiceInstance;
import io.steelyard.balancer.spi.SlowStartConfig;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Load balancer {@code steelyard-weighted} through Stork's programmatic API over the {@code
 * steelyard} discovery and a real etcd: shares over 100,000 picks, drain, zones, slow start, and
 * candidates judged by the live view.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SteelyardLoadBalancerTest {

  private static final int PICKS = 100_000;

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private static Client client;
  private final StorkFixture fixture = new StorkFixture();

  @BeforeAll
  static void connect() {
    client = EtcdConnection.of(etcd.endpoints()).connect();
  }

  @AfterAll
  static void disconnect() {
    client.close();
  }

  @AfterEach
  void closeStork() throws Exception {
    fixture.close();
  }

  private Service service(String name, Map<String, String> lb, String... discovery) {
    Map<String, String> d = new HashMap<>(Map.of("endpoints", etcd.endpoints()));
    for (int i = 0; i < discovery.length; i += 2) {
      d.put(discovery[i], discovery[i + 1]);
    }
    fixture.service(name, "steelyard-weighted", lb, d);
    return fixture.service(name);
  }

  /** Picks per host over {@code picks} selections through Stork's own path. */
  private static Map<String, Integer> picks(Service service, int picks) {
    Map<String, Integer> counts = new HashMap<>();
    for (int i = 0; i < picks; i++) {
      ServiceInstance s = service.selectInstance().await().atMost(Duration.ofSeconds(5));
      counts.merge(s.getHost(), 1, Integer::sum);
    }
    return counts;
  }

  private static Map<String, Integer> picks(Service service, Collection<ServiceInstance> candidates, int picks) {
    Map<String, Integer> counts = new HashMap<>();
    for (int i = 0; i < picks; i++) {
      ServiceInstance s = service.selectInstanceAndRecordStart(candidates, false);
      assertThat(candidates).as("a candidate object itself is returned").anySatisfy(c -> assertThat(c).isSameAs(s));
      counts.merge(s.getHost(), 1, Integer::sum);
    }
    return counts;
  }

  private static double share(Map<String, Integer> counts, String host) {
    int total = counts.values().stream().mapToInt(Integer::intValue).sum();
    return counts.getOrDefault(host, 0) / (double) total;
  }

  @Test
  void picksInProportionToWeightOver100000Picks() throws Exception {
    put(client, "/services/shares/10.0.0.1:8080", "10.0.0.1:8080|1");
    put(client, "/services/shares/10.0.0.2:8080", "10.0.0.2:8080|3");
    Service service = service("shares", Map.of());

    Map<String, Integer> counts = picks(service, PICKS);

    // Binomial: the standard deviation of a 25 % share over 100,000 picks is 0.14 points.
    assertThat(share(counts, "10.0.0.1")).isCloseTo(0.25, within(0.01));
    assertThat(share(counts, "10.0.0.2")).isCloseTo(0.75, within(0.01));
  }

  @Test
  void neverPicksADrainedInstanceAndPicksEvenlyWhenAllAreDrained() throws Exception {
    put(client, "/services/drain/10.0.0.1:8080", "10.0.0.1:8080|0");
    put(client, "/services/drain/10.0.0.2:8080", "10.0.0.2:8080|3");
    Service service = service("drain", Map.of());

    assertThat(picks(service, 10_000)).containsOnlyKeys("10.0.0.2");

    put(client, "/services/drain/10.0.0.2:8080", "10.0.0.2:8080|0");
    await().atMost(Duration.ofSeconds(5)).until(() -> fixture.discovery("drain").view().weight(1) == 0);
    Map<String, Integer> counts = picks(service, 10_000);
    assertThat(share(counts, "10.0.0.1")).as("every instance drained: equal weights").isCloseTo(0.5, within(0.03));
  }

  @Test
  void keepsCallsInTheCallersZoneAndSpillsWhatItsAvailableCapacityCannotCarry() throws Exception {
    put(client, "/services/zones/10.0.0.1:8080", json("10.0.0.1:8080", 2, "a"));
    put(client, "/services/zones/10.0.0.2:8080", json("10.0.0.2:8080", 2, "a"));
    put(client, "/services/zones/10.0.0.3:8080", json("10.0.0.3:8080", 4, "b"));
    Service service = service("zones", Map.of(), "zone", "a");

    Map<String, Integer> all = picks(service, PICKS);
    assertThat(share(all, "10.0.0.3")).as("zone a carries its half: nothing leaves").isZero();
    assertThat(share(all, "10.0.0.1")).isCloseTo(0.5, within(0.01));

    // A client whose connection to 10.0.0.2 is down hands in the other two: zone a can carry
    // up(a) / exp(a) = (2/6) / (4/8) = two thirds of its calls, the rest spills to b.
    List<ServiceInstance> twoOfThree = new ArrayList<>(fixture.instances("zones"));
    twoOfThree.remove(1);
    Map<String, Integer> spilled = picks(service, twoOfThree, PICKS);
    assertThat(share(spilled, "10.0.0.1")).isCloseTo(2 / 3.0, within(0.01));
    assertThat(share(spilled, "10.0.0.3")).isCloseTo(1 / 3.0, within(0.01));
  }

  @Test
  void withZoneRoutingOffPicksByWeightAcrossZones() throws Exception {
    put(client, "/services/blind/10.0.0.1:8080", json("10.0.0.1:8080", 1, "a"));
    put(client, "/services/blind/10.0.0.2:8080", json("10.0.0.2:8080", 3, "b"));
    Service service = service("blind", Map.of("zone-routing", "false"), "zone", "a");

    assertThat(share(picks(service, PICKS), "10.0.0.1")).isCloseTo(0.25, within(0.01));
  }

  @Test
  void candidatesACachedListHandsInAreJudgedByTheLiveView() throws Exception {
    put(client, "/services/cached/10.0.0.1:8080", "10.0.0.1:8080|1");
    put(client, "/services/cached/10.0.0.2:8080", "10.0.0.2:8080|3");
    put(client, "/services/cached/10.0.0.3:8080", "10.0.0.3:8080|1");
    Service service = service("cached", Map.of());
    // What a gRPC client resolved once and keeps handing in: a copy, never refreshed.
    List<ServiceInstance> resolvedOnce = new ArrayList<>(fixture.instances("cached"));

    put(client, "/services/cached/10.0.0.1:8080", "10.0.0.1:8080|0");
    await().atMost(Duration.ofSeconds(5)).until(() -> fixture.discovery("cached").view().weight(0) == 0);
    Map<String, Integer> drained = picks(service, resolvedOnce, 20_000);
    assertThat(drained).doesNotContainKey("10.0.0.1");
    assertThat(share(drained, "10.0.0.2")).isCloseTo(0.75, within(0.02));

    delete(client, "/services/cached/10.0.0.2:8080");
    await().atMost(Duration.ofSeconds(5)).until(() -> fixture.discovery("cached").view().size() == 2);
    assertThat(picks(service, resolvedOnce, 10_000)).as("gone from etcd: not picked").containsOnlyKeys("10.0.0.3");
  }

  @Test
  void rampsAnInstanceThatAppearsAfterTheFirstListOverTheWindow() throws Exception {
    put(client, "/services/ramp/10.0.0.1:8080", "10.0.0.1:8080|1");
    AtomicLong now = new AtomicLong(1_000_000_000L);
    SteelyardServiceDiscovery discovery = new SteelyardServiceDiscovery(
        "ramp", EtcdConnection.of(etcd.endpoints()), KeyLayout.defaults(), null, false, now::get);
    try {
      SlowStartConfig slowStart = new SlowStartConfig(TimeUnit.SECONDS.toNanos(10), 1.0, 10);
      SteelyardLoadBalancer lb = new SteelyardLoadBalancer("ramp", discovery, slowStart, true, 1, now::get);
      discovery.getServiceInstances().await().atMost(Duration.ofSeconds(10));

      put(client, "/services/ramp/10.0.0.2:8080", "10.0.0.2:8080|1");
      await().atMost(Duration.ofSeconds(5)).until(() -> discovery.view().size() == 2);
      // Effective weights: 1 × 100 against max(1, 1 × 100 × factor).
      assertThat(newcomerShare(lb, discovery)).as("at the start: the 10 %% floor").isCloseTo(10 / 110.0, within(0.01));
      now.addAndGet(TimeUnit.SECONDS.toNanos(5));
      assertThat(newcomerShare(lb, discovery)).as("half way").isCloseTo(50 / 150.0, within(0.01));
      now.addAndGet(TimeUnit.SECONDS.toNanos(5));
      assertThat(newcomerShare(lb, discovery)).as("after the window").isCloseTo(0.5, within(0.01));
    } finally {
      discovery.close();
    }
  }

  private static double newcomerShare(SteelyardLoadBalancer lb, SteelyardServiceDiscovery discovery) {
    int newcomer = 0;
    for (int i = 0; i < PICKS; i++) {
      if (lb.selectServiceInstance(discovery.view().instances()).getHost().equals("10.0.0.2")) {
        newcomer++;
      }
    }
    return newcomer / (double) PICKS;
  }

  @Test
  void overAnotherDiscoveryReadsTheWeightLabelZoneBlind() {
    List<ServiceInstance> list = List.of(
        new DefaultServiceInstance(1, "10.0.0.1", 80, false, Map.of("weight", "1"), Metadata.empty()),
        new DefaultServiceInstance(2, "10.0.0.2", 80, false, Map.of("weight", "3", "zone", "a"), Metadata.empty()),
        new DefaultServiceInstance(3, "10.0.0.3", 80, false, Map.of("weight", "0"), Metadata.empty()),
        new DefaultServiceInstance(4, "10.0.0.4", 80, false, Map.of(), Metadata.empty()));
    ServiceDiscovery other = () -> Uni.createFrom().item(list);
    SteelyardLoadBalancer lb = new SteelyardLoadBalancer("other", other, null, true, 1, System::nanoTime);

    Map<String, Integer> counts = new HashMap<>();
    for (int i = 0; i < PICKS; i++) {
      counts.merge(lb.selectServiceInstance(list).getHost(), 1, Integer::sum);
    }
    assertThat(share(counts, "10.0.0.1")).isCloseTo(0.2, within(0.01));
    assertThat(share(counts, "10.0.0.2")).isCloseTo(0.6, within(0.01));
    assertThat(counts).doesNotContainKey("10.0.0.3");
    assertThat(share(counts, "10.0.0.4")).as("no label: weight 1").isCloseTo(0.2, within(0.01));
    assertThatThrownBy(() -> lb.selectServiceInstance(List.of())).isInstanceOf(NoServiceInstanceFoundException.class);
  }

  @Test
  void aBadLoadBalancerAttributeFailsStorksInitialisation() {
    fixture.service("badlb", "steelyard-weighted", Map.of("slow-start-window", "soon"),
        Map.of("endpoints", etcd.endpoints()));

    assertThatThrownBy(fixture::stork)
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("Stork service 'badlb', load-balancer 'steelyard-weighted': slow-start-window: 'soon'"
            + " (expected: a duration like 30S, 2M or 30)");
  }

  private static String json(String address, int weight, String zone) {
    return "{\"Op\":0,\"Addr\":\"" + address + "\",\"Metadata\":{\"weight\":" + weight + ",\"zone\":\"" + zone + "\"}}";
  }

}
