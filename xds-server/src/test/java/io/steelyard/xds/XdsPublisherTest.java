package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;

import io.envoyproxy.controlplane.cache.v3.SimpleCache;
import io.envoyproxy.envoy.config.core.v3.Locality;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.steelyard.discovery.ChannelConfigCheck;
import io.steelyard.discovery.Snapshot;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.testkit.time.FakeScheduler;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * When the publisher pushes, under fake time: the slow-start ramp's steps, and the life of a
 * zone's snapshot group.
 */
class XdsPublisherTest {

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
  private static final String SERVICE = "greeter";

  private final FakeScheduler scheduler = new FakeScheduler();
  private final Clock clock = new Clock() {
    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      return this;
    }

    @Override
    public Instant instant() {
      return T0.plusNanos(scheduler.nanoTime());
    }
  };
  private final SimpleCache<String> cache = new SimpleCache<>(node -> publisher().subscribers().groupOf(node));
  private final XdsPublisher publisher = new XdsPublisher(cache, scheduler, clock, 2,
      new ConfigMapping(ChannelConfigCheck.create()), () -> {});

  private XdsPublisher publisher() {
    return publisher;
  }

  private static ServiceInstance instance(String address, String zone) {
    return new ServiceInstance(SERVICE, address, 2, Map.of("zone", zone));
  }

  private void view(long revision, ServiceInstance... instances) {
    publisher.onSnapshot(Snapshot.of(SERVICE, List.of(instances), revision));
    scheduler.runDue();
  }

  private static Node node(String id, String zone) {
    return Node.newBuilder().setId(id).setLocality(Locality.newBuilder().setZone(zone)).build();
  }

  private void open(long stream, String zone) {
    publisher.subscribers().node(stream, node("node-" + stream, zone));
    scheduler.runDue();
  }

  private void close(long stream) {
    publisher.subscribers().closed(stream);
    scheduler.runDue();
  }

  @Test
  void aRampIsPushedAtMostASecondApartAndNotAfterItsWindow() {
    ServiceInstance a1 = instance("10.0.0.1:50051", "a");
    ServiceInstance a2 = instance("10.0.0.2:50051", "a");
    ServiceInstance a3 = instance("10.0.0.3:50051", "a");
    view(1, a1, a2);
    publisher.onServiceConfig(SERVICE, "{\"loadBalancingConfig\":[{\"weighted_random\":{\"slowStart\":{\"window\":\"10s\",\"minWeightPercent\":1}}}]}", 2);
    scheduler.forwardTime(Duration.ofSeconds(5));

    view(3, a1, a2, a3);
    Duration joined = Duration.ofNanos(scheduler.nanoTime());
    List<Duration> pushes = new ArrayList<>(List.of(joined));
    Object served = cache.getSnapshot(XdsPublisher.GROUP);
    for (int i = 0; i < 600; i++) { // 30 s in steps of 50 ms
      scheduler.forwardTime(Duration.ofMillis(50));
      Object now = cache.getSnapshot(XdsPublisher.GROUP);
      if (now != served) {
        pushes.add(Duration.ofNanos(scheduler.nanoTime()));
        served = now;
      }
    }

    for (int i = 1; i < pushes.size(); i++) {
      assertThat(pushes.get(i).minus(pushes.get(i - 1))).as("between pushes %s", pushes)
          .isLessThanOrEqualTo(SlowStartRamps.MAX_STEP);
    }
    Duration windowEnd = joined.plusSeconds(10);
    assertThat(pushes).as("pushes, joined at %s", joined).hasSizeGreaterThanOrEqualTo(10);
    assertThat(pushes.get(pushes.size() - 1)).as("the last push, the window ending at %s", windowEnd)
        .isLessThanOrEqualTo(windowEnd.plus(SlowStartRamps.MAX_STEP));
    assertThat(scheduler.pending()).as("steps still scheduled after the window").isZero();
    assertThat(scheduler.delaysNanos()).as("every step scheduled").allMatch(d -> d <= SlowStartRamps.MAX_STEP.toNanos());
    assertThat(weights(null)).containsValues(2, 2, 2);
  }

  /** The locality weights served to callers in {@code zone} (null: zone-less), by address. */
  private Map<String, Integer> weights(String zone) {
    XdsSnapshot snapshot = publisher.snapshot(zone);
    Map<String, Integer> out = new java.util.TreeMap<>();
    snapshot.endpoints().resources().get(SERVICE).getEndpointsList()
        .forEach(l -> out.put(l.getLocality().getSubZone(), l.getLoadBalancingWeight().getValue()));
    return out;
  }

  @Test
  void aZoneGroupIsDroppedAGraceAfterItsLastStreamClosed() {
    view(1, instance("10.0.0.1:50051", "a"), instance("10.0.0.2:50051", "b"));
    open(1, "a");
    open(2, "a");
    assertThat(publisher.snapshot("a")).isNotNull();

    close(1);
    scheduler.forwardTime(Subscribers.ZONE_GRACE);
    assertThat(publisher.snapshot("a")).as("while a stream of zone a is open").isNotNull();

    close(2);
    scheduler.forwardTime(Subscribers.ZONE_GRACE.minusSeconds(1));
    assertThat(publisher.snapshot("a")).as("within the grace").isNotNull();
    scheduler.forwardTime(Duration.ofSeconds(1));
    assertThat(publisher.snapshot("a")).as("after the grace").isNull();
    assertThat(publisher.subscribers().zones()).isEmpty();
    assertThat(scheduler.pending()).isZero();

    open(3, "a");
    assertThat(publisher.snapshot("a")).as("zone a back").isNotNull();
  }

  @Test
  void aClientThatReconnectsWithinTheGraceKeepsItsZoneGroup() {
    view(1, instance("10.0.0.1:50051", "a"), instance("10.0.0.2:50051", "b"));
    open(1, "a");
    XdsSnapshot before = publisher.snapshot("a");

    close(1);
    scheduler.forwardTime(Duration.ofSeconds(5));
    open(2, "a");
    scheduler.forwardTime(Subscribers.ZONE_GRACE.multipliedBy(2));

    assertThat(publisher.snapshot("a")).as("the same group, not rebuilt").isSameAs(before);
    assertThat(scheduler.pending()).as("no expiry left behind").isZero();
  }

  @Test
  void aZoneOverTheBoundGetsNoGroupOfItsOwn() {
    view(1, instance("10.0.0.1:50051", "a"), instance("10.0.0.2:50051", "b"));
    open(1, "a");
    open(2, "b");
    open(3, "c");

    assertThat(publisher.snapshot("a")).isNotNull();
    assertThat(publisher.snapshot("b")).isNotNull();
    assertThat(publisher.snapshot("c")).isNull();
    assertThat(publisher.subscribers().groupOf(node("node-3", "c"))).isEqualTo(XdsPublisher.GROUP);
    assertThat(publisher.subscribers().zones()).containsExactlyInAnyOrder("a", "b");
  }

  private static final String TIMEOUT = "{\"methodConfig\":[{\"name\":[{}],\"timeout\":\"0.2s\"}]";

  private io.envoyproxy.envoy.config.listener.v3.Listener servedListener() {
    return ((XdsSnapshot) cache.getSnapshot(XdsPublisher.GROUP)).listeners().resources().get(SERVICE);
  }

  @Test
  void aPartWithoutAnXdsFormIsLoggedAndCountedOncePerRevisionAndTheRestIsServed() throws Exception {
    view(1, instance("10.0.0.1:50051", "a"));
    try (Logs logs = Logs.of(XdsPublisher.class)) {
      publisher.onServiceConfig(SERVICE, TIMEOUT + ",\"retryThrottling\":{\"maxTokens\":10,\"tokenRatio\":0.5}}", 2);
      scheduler.runDue();
      view(3, instance("10.0.0.1:50051", "a"), instance("10.0.0.2:50051", "a")); // rebuilt, same config
      publisher.onServiceConfig(SERVICE, TIMEOUT + ",\"retryThrottling\":{\"maxTokens\":10,\"tokenRatio\":0.5}}", 2);
      scheduler.runDue();

      assertThat(logs.lines()).filteredOn(l -> l.contains("served without")).containsExactly(
          "WARN The stored service config of greeter (revision 2) is served without retryThrottling: xDS has no form for it");
      assertThat(publisher.partlyMappedConfigs()).isEqualTo(1);
      assertThat(servedListener().getApiListener().getApiListener()
              .unpack(io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager.class)
              .getRouteConfig().getVirtualHosts(0).getRoutes(0).getRoute().hasMaxStreamDuration())
          .isTrue();
    }
  }

  @Test
  void aRefusedConfigIsCountedOnceAndTheLastGoodOneStaysInForce() {
    view(1, instance("10.0.0.1:50051", "a"));
    publisher.onServiceConfig(SERVICE, TIMEOUT + "}", 2);
    scheduler.runDue();
    var good = servedListener();
    try (Logs logs = Logs.of(XdsPublisher.class)) {
      publisher.onServiceConfig(SERVICE, "{\"methodConfig\":[{\"name\":[{}],\"timeout\":\"soon\"}]}", 4);
      scheduler.runDue();
      publisher.onServiceConfig(SERVICE, "{\"methodConfig\":[{\"name\":[{}],\"timeout\":\"soon\"}]}", 4);
      view(5, instance("10.0.0.1:50051", "a"), instance("10.0.0.2:50051", "a"));

      assertThat(publisher.refusedConfigs()).isEqualTo(1);
      assertThat(logs.lines()).filteredOn(l -> l.contains("refused")).hasSize(1).first().asString()
          .startsWith("WARN The stored service config of greeter (revision 4) is refused, the last good one stays in force:");
      assertThat(servedListener()).isEqualTo(good);
    }
  }
}
