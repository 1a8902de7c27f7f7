package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Watch;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.admin.InstanceStore;
import io.steelyard.registry.admin.InstanceWrite;
import io.steelyard.testkit.EtcdCluster;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A registration whose weight follows a source, against a real etcd, with an operator at the CLI. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class WeightSourceIT {

  private static final Duration SAMPLE = Duration.ofMillis(100);
  private static final Duration MIN_WRITE = Duration.ofMillis(500);

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private static final AtomicInteger PORTS = new AtomicInteger(52000);
  @RegisterExtension
  @Order(EtcdProbe.AFTER_THE_CLUSTER)
  static final EtcdProbe probe = EtcdProbe.of(etcd);

  /** What the CLI's weight set, drain and undrain run. */
  private static InstanceStore operator;

  private final AtomicInteger signal = new AtomicInteger(10);
  private ServiceRegistration reg;

  @BeforeAll
  static void connect() {
    operator = new InstanceStore(probe.client, KeyLayout.defaults(), Duration.ofSeconds(5));
  }

  @AfterEach
  void closeRegistration() {
    if (reg != null) {
      reg.close();
    }
  }

  private ServiceRegistration started(WeightSource source) throws Exception {
    reg =
        ServiceRegistration.builder(
                EtcdConnection.of(etcd.endpoints()), "sourced", "127.0.0.1:" + PORTS.incrementAndGet())
            .weightSource(source)
            .weightSampling(SAMPLE, MIN_WRITE)
            .weightHysteresis(0.1, 1)
            .build();
    reg.start().get(30, TimeUnit.SECONDS);
    return reg;
  }

  private String valueFor(int weight) {
    return reg.address() + "|" + weight;
  }

  private void awaitEtcdWeight(int weight) {
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50))
        .until(() -> valueFor(weight).equals(probe.value(reg.key())));
  }

  /** The key keeps {@code weight} for several write intervals while the source says otherwise. */
  private void assertEtcdKeeps(int weight) {
    await().during(MIN_WRITE.multipliedBy(4)).atMost(MIN_WRITE.multipliedBy(8))
        .pollInterval(Duration.ofMillis(50))
        .until(() -> valueFor(weight).equals(probe.value(reg.key())));
  }

  @Test
  void theSourcesChangesReachEtcdWithTheLeaseKept() throws Exception {
    started(signal::get);
    assertThat(probe.value(reg.key())).isEqualTo(valueFor(10)); // the first sample, registered
    long lease = reg.leaseId();

    signal.set(20);

    awaitEtcdWeight(20);
    assertThat(probe.lease(reg.key())).isEqualTo(lease);
    assertThat(reg.weight()).isEqualTo(20);
    assertThat(reg.weightSourcePaused()).isFalse();
  }

  @Test
  void anOperatorsDrainHoldsUntilUndrainHandsTheWeightBack() throws Exception {
    started(signal::get);

    operator.apply(InstanceWrite.drain("sourced", reg.address())); // steelyard drain
    await().atMost(Duration.ofSeconds(5)).until(reg::weightSourcePaused);
    signal.set(30);
    assertEtcdKeeps(0);

    operator.apply(InstanceWrite.undrain("sourced", reg.address())); // back to 10, the source's

    awaitEtcdWeight(30);
    assertThat(reg.weightSourcePaused()).isFalse();
  }

  @Test
  void anOperatorsWeightHoldsUntilTheApplicationResumesTheSource() throws Exception {
    started(signal::get);

    operator.apply(InstanceWrite.setWeight("sourced", reg.address(), 7)); // steelyard weight set
    await().atMost(Duration.ofSeconds(5)).until(reg::weightSourcePaused);
    assertThat(reg.weight()).isEqualTo(7);
    signal.set(40);
    assertEtcdKeeps(7);

    reg.resumeWeightSource();

    awaitEtcdWeight(40);
  }

  @Test
  void setWeightPinsTheWeightOverTheSource() throws Exception {
    started(signal::get);

    reg.setWeightAndWait(3);
    signal.set(50);

    assertThat(reg.weightSourcePaused()).isTrue();
    assertEtcdKeeps(3);
  }

  @Test
  void aFlappingSourceWritesAtMostOncePerInterval() throws Exception {
    AtomicInteger samples = new AtomicInteger();
    started(() -> samples.incrementAndGet() % 2 == 0 ? 100 : 10); // changes at every sample
    long from = probe.get(reg.key()).orElseThrow().getModRevision() + 1;
    List<WatchEvent> writes = new CopyOnWriteArrayList<>();
    Duration watched = Duration.ofSeconds(3);
    try (Watch.Watcher w =
        probe.client.getWatchClient()
            .watch(EtcdProbe.bytes(reg.key()), WatchOption.builder().withRevision(from).build(),
                r -> writes.addAll(r.getEvents()))) {
      int samplesBefore = samples.get();
      await().pollDelay(watched).atMost(watched.plusSeconds(5)).until(() -> true);
      int sampled = samples.get() - samplesBefore;

      // One write per 500 ms at most: 6 in 3 s, plus one for the window's edges.
      assertThat(writes.size()).as("writes in %s, %s samples", watched, sampled).isBetween(1, 7);
      assertThat(sampled).isGreaterThan(writes.size());
    }
  }
}
