package io.steelyard.discovery;

import static io.steelyard.discovery.ScriptedEtcdReader.kv;
import static io.steelyard.discovery.ScriptedEtcdReader.listing;
import static io.steelyard.discovery.ScriptedEtcdReader.put;
import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.NameResolver.ConfigOrError;
import io.grpc.NameResolver.ServiceConfigParser;
import io.grpc.Status;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ServiceConfigJson;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** {@link ServiceConfigWatcher} under fake time, over a scripted etcd. */
class ServiceConfigWatcherTest {

  private static final String KEY = "/services/.config/greeter";
  private static final String CONFIG = "{\"loadBalancingConfig\":[{\"weighted_random\":{}}]}";
  private static final String BAD = "{\"bad\":1}";
  private static final Map<String, ?> FALLBACK =
      Map.of("loadBalancingConfig", List.of(Map.of("pick_first", Map.of())));

  private final InlineFakeScheduler scheduler = new InlineFakeScheduler();
  private final ScriptedEtcdReader etcd = new ScriptedEtcdReader("etcd");
  private final ClientSource clients = new ClientSource() {
    @Override
    public EtcdReader reader() {
      return etcd;
    }

    @Override
    public void renew(EtcdReader failed) {}
  };
  private final ServiceConfigWatcher watcher = new ServiceConfigWatcher(
      clients, "http://etcd:2379", KeyLayout.defaults(), "greeter", WatcherConfig.DEFAULTS,
      scheduler, new Random(1));
  private final List<StoredServiceConfig> seen = new ArrayList<>();

  @Test
  void readsNothingUntilItsFirstListener() {
    assertThat(etcd.lists).isEmpty();

    watcher.addListener(seen::add);

    assertThat(etcd.lists).hasSize(1);
  }

  @Test
  void aStoredConfigIsHandedOverThenWatchedFromTheNextRevision() {
    watcher.addListener(seen::add);

    etcd.pendingList().complete(listing(7, kv(KEY, CONFIG, 5)));

    assertThat(seen).containsExactly(StoredServiceConfig.present(CONFIG, 5));
    assertThat(etcd.openWatch().prefix).isEqualTo(KEY);
    assertThat(etcd.openWatch().exactKey).isTrue();
    assertThat(etcd.openWatch().fromRevision).isEqualTo(8);
  }

  @Test
  void changesAndADeleteArriveInOrder() {
    watcher.addListener(seen::add);
    etcd.pendingList().complete(listing(7));

    etcd.openWatch().events(8, put(KEY, CONFIG, 8));
    etcd.openWatch().events(9, EtcdReader.Event.delete(KEY, 9));

    assertThat(seen).containsExactly(
        StoredServiceConfig.ABSENT, StoredServiceConfig.present(CONFIG, 8), StoredServiceConfig.ABSENT);
  }

  @Test
  void aFailedFirstReadSettlesAsUnreadableSoChannelsDoNotWait() {
    watcher.addListener(seen::add);

    etcd.pendingList().completeExceptionally(new IllegalStateException("permission denied"));

    assertThat(seen).containsExactly(StoredServiceConfig.UNREADABLE);
  }

  @Test
  void aBrokenWatchKeepsTheConfigAndReadsAgainAfterABackoff() {
    watcher.addListener(seen::add);
    etcd.pendingList().complete(listing(7, kv(KEY, CONFIG, 5)));

    etcd.openWatch().fail(new IllegalStateException("etcd went away"));
    assertThat(etcd.watches.get(0).cancelled).isTrue();
    assertThat(etcd.lists).hasSize(1);
    scheduler.forward(WatcherDefaults.BACKOFF_MAX_MILLIS, TimeUnit.MILLISECONDS);
    assertThat(etcd.lists).hasSize(2);
    etcd.pendingList().complete(listing(12, kv(KEY, "{}", 11)));

    assertThat(seen).containsExactly(StoredServiceConfig.present(CONFIG, 5), StoredServiceConfig.present("{}", 11));
    assertThat(etcd.openWatch().fromRevision).isEqualTo(13);
  }

  @Test
  void aLateListenerIsGreetedWithTheCurrentConfig() {
    watcher.addListener(seen::add);
    etcd.pendingList().complete(listing(7, kv(KEY, CONFIG, 5)));
    List<StoredServiceConfig> late = new ArrayList<>();

    watcher.addListener(late::add);

    assertThat(late).containsExactly(StoredServiceConfig.present(CONFIG, 5));
    assertThat(etcd.lists).hasSize(1);
  }

  @Test
  void eachBadRevisionIsReportedByOneChannelOnly() {
    assertThat(watcher.firstToReport(5)).isTrue();
    assertThat(watcher.firstToReport(5)).isFalse();
    assertThat(watcher.firstToReport(6)).isTrue();
  }

  @Test
  void aChannelCreatedWhileTheStoredConfigIsRefusedStartsOnTheOneAnotherChannelAccepted() {
    ServiceConfigChoice first = channel();
    watcher.addListener(first::update);
    etcd.pendingList().complete(listing(7, kv(KEY, CONFIG, 5)));
    etcd.openWatch().events(8, put(KEY, BAD, 8));

    ServiceConfigChoice second = channel();
    watcher.addListener(second::update);

    assertThat(second.effective().getConfig()).isEqualTo(ServiceConfigJson.parse(CONFIG));
    assertThat(first.effective().getConfig()).isEqualTo(ServiceConfigJson.parse(CONFIG));
  }

  @Test
  void aDeletedConfigIsNotRememberedForLaterChannels() {
    ServiceConfigChoice first = channel();
    watcher.addListener(first::update);
    etcd.pendingList().complete(listing(7, kv(KEY, CONFIG, 5)));
    etcd.openWatch().events(8, EtcdReader.Event.delete(KEY, 8));
    etcd.openWatch().events(9, put(KEY, BAD, 9));

    ServiceConfigChoice second = channel();
    watcher.addListener(second::update);

    assertThat(second.effective().getConfig()).isEqualTo(FALLBACK);
    assertThat(first.effective().getConfig()).isEqualTo(FALLBACK);
  }

  /** A channel's choice on this watcher, with a parser that refuses a config holding "bad". */
  private ServiceConfigChoice channel() {
    ServiceConfigParser parser = new ServiceConfigParser() {
      @Override
      public ConfigOrError parseServiceConfig(Map<String, ?> raw) {
        return raw.containsKey("bad")
            ? ConfigOrError.fromError(Status.UNAVAILABLE.withDescription("bad: refused"))
            : ConfigOrError.fromConfig(raw);
      }
    };
    return new ServiceConfigChoice("greeter", parser, FALLBACK, watcher::firstToReport,
        watcher::firstToAnnounceFallback, watcher);
  }

  @Test
  void nothingIsReadOrWatchedAfterClose() {
    watcher.addListener(seen::add);
    etcd.pendingList().complete(listing(7));

    watcher.close();

    assertThat(etcd.watches.get(0).cancelled).isTrue();
    scheduler.forward(10, TimeUnit.MINUTES);
    assertThat(etcd.lists).hasSize(1);
  }
}
