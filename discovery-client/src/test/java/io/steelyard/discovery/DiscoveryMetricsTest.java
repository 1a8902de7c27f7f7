package io.steelyard.discovery;

import static io.steelyard.discovery.ScriptedEtcdReader.keysAt;
import static io.steelyard.discovery.ScriptedEtcdReader.kv;
import static io.steelyard.discovery.ScriptedEtcdReader.listing;
import static io.steelyard.discovery.ScriptedEtcdReader.put;
import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.steelyard.discovery.ScriptedEtcdReader.ScriptedWatch;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The discovery meters over a registry whose etcd is scripted and whose time is fake. */
class DiscoveryMetricsTest {

  private static final EtcdConnection ETCD = EtcdConnection.of("http://127.0.0.1:9");
  private static final String P = "/services/greeter/";

  private final InlineFakeScheduler scheduler = new InlineFakeScheduler();
  private final ScriptedEtcdReader reader = new ScriptedEtcdReader("etcd");
  private final WatchRegistry registry = new WatchRegistry(scheduler, new Random(1), Runnable::run,
      c -> new WatchRegistry.SharedClient() {
        @Override
        public EtcdReader reader() {
          return reader;
        }

        @Override
        public void renew(EtcdReader failed) {}

        @Override
        public void close() {}
      });
  private final MeterRegistry meters = new SimpleMeterRegistry();
  private final DiscoveryMetrics metrics = new DiscoveryMetrics(registry);
  private final List<Snapshot> snapshots = new ArrayList<>();

  private WatchRegistry.Subscription subscribe(String service) {
    return registry.subscribe(ETCD, KeyLayout.defaults(), service,
        WatcherConfig.DEFAULTS.withDebounce(Duration.ZERO), new WatchListener() {
          @Override
          public void onSnapshot(Snapshot snapshot) {
            snapshots.add(snapshot);
          }

          @Override
          public void onUnavailable(Throwable cause) {}
        });
  }

  private ScriptedWatch listedAndWatching() {
    reader.pendingList().complete(listing(10,
        kv(P + "a", "10.0.0.1:1|2", 7), kv(P + "b", "10.0.0.2:1|1", 8)));
    ScriptedWatch w = reader.openWatch();
    w.confirm(1, 10);
    return w;
  }

  private double gauge(String name) {
    return meters.get(name).tag("service", "greeter").gauge().value();
  }

  private double relists(RelistCause cause) {
    return meters.get(DiscoveryMetrics.RELISTS).tags("service", "greeter", "cause", cause.tag())
        .functionCounter().count();
  }

  @Test
  void instancesMalformedAndRelistsByCauseFollowTheWatch() {
    metrics.bindTo(meters);
    subscribe("greeter");
    ScriptedWatch w = listedAndWatching();
    assertThat(gauge(DiscoveryMetrics.INSTANCES)).isEqualTo(2);
    for (RelistCause c : RelistCause.values()) {
      assertThat(relists(c)).as("the first listing is no re-list").isZero();
    }

    w.events(12, put(P + "c", "10.0.0.3:1|1", 12), put(P + "bad", "10.0.0.4:1|-1", 12));
    assertThat(gauge(DiscoveryMetrics.INSTANCES)).isEqualTo(3);
    assertThat(meters.get(DiscoveryMetrics.MALFORMED).tag("service", "greeter")
        .functionCounter().count()).isEqualTo(1);
    assertThat(meters.get(DiscoveryMetrics.STALE_EVENTS).tag("service", "greeter")
        .functionCounter().count()).isZero();
    // A gRPC proxy may replay an event the view already holds (b at revision 8): skipped, counted.
    w.events(13, put(P + "b", "10.0.0.2:1|7", 8));
    assertThat(meters.get(DiscoveryMetrics.STALE_EVENTS).tag("service", "greeter")
        .functionCounter().count()).isEqualTo(1);
    assertThat(gauge(DiscoveryMetrics.INSTANCES)).isEqualTo(3);

    w.compacted(15);
    reader.pendingList().complete(listing(20, kv(P + "a", "10.0.0.1:1|2", 7)));
    assertThat(relists(RelistCause.COMPACTION)).isEqualTo(1);
    assertThat(gauge(DiscoveryMetrics.INSTANCES)).isEqualTo(1);

    reader.openWatch().confirm(1, 20);
    scheduler.forward(ServiceWatcher.DEFAULT_RELIST_INTERVAL_MINUTES, TimeUnit.MINUTES);
    assertThat(relists(RelistCause.PERIODIC)).isEqualTo(1);
  }

  @Test
  void staleSecondsGrowOnTheWatchersClockWhileEtcdIsAwayAndDropToZero() {
    scheduler.forward(1, TimeUnit.SECONDS); // a clock past 0: staleness is stamped at >= 1 ms
    metrics.bindTo(meters);
    subscribe("greeter");
    ScriptedWatch w = listedAndWatching();
    assertThat(gauge(DiscoveryMetrics.STALE)).isZero();

    w.fail(new IOException("connection reset"));
    scheduler.forward(150, TimeUnit.MILLISECONDS);
    assertThat(gauge(DiscoveryMetrics.STALE)).isEqualTo(0.15);
    scheduler.forward(150, TimeUnit.MILLISECONDS); // the resume: 200 ms ±25% after the failure
    reader.pendingKeysAt().answer().complete(keysAt(P + "a", 7, P + "b", 8)); // our view: resume
    reader.openWatch().confirm(1, 10);
    assertThat(gauge(DiscoveryMetrics.STALE)).isZero();
  }

  @Test
  void propagationIsTheTimeFromAWatchResponseToTheChannelHoldingIt() {
    metrics.bindTo(meters);
    WatchRegistry.Subscription s = subscribe("greeter");
    ScriptedWatch w = listedAndWatching();
    s.watcher().propagated(snapshots.get(0)); // a listing carries no event: nothing to measure

    w.events(12, put(P + "c", "10.0.0.3:1|1", 12));
    scheduler.forward(7, TimeUnit.MILLISECONDS);
    s.watcher().propagated(snapshots.get(snapshots.size() - 1));

    Timer t = meters.get(DiscoveryMetrics.PROPAGATION).tag("service", "greeter").timer();
    assertThat(t.count()).isEqualTo(1);
    assertThat(t.totalTime(TimeUnit.MILLISECONDS)).isEqualTo(7);
  }

  @Test
  void aServicesMetersComeWithItsFirstWatcherAndGoWithItsLast() {
    WatchRegistry.Subscription before = subscribe("greeter");
    metrics.bindTo(meters); // watchers alive at binding time are measured too
    listedAndWatching();
    assertThat(gauge(DiscoveryMetrics.INSTANCES)).isEqualTo(2);
    assertThat(meters.get(DiscoveryMetrics.WATCHES).gauge().value()).isEqualTo(1);

    before.close();
    assertThat(meters.find(DiscoveryMetrics.INSTANCES).meters()).isEmpty();
    metrics.close();
    assertThat(meters.getMeters()).isEmpty();
  }
}
