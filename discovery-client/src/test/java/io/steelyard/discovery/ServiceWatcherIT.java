package io.steelyard.discovery;

import static io.steelyard.discovery.Etcd.delete;
import static io.steelyard.discovery.Etcd.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.Client;
import io.grpc.EquivalentAddressGroup;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.steelyard.registry.EndpointWeights;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.internal.EtcdCalls;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.grpc.RecordingLoadBalancerProvider;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The watcher and the resolver against one real etcd member: the normal paths. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class ServiceWatcherIT {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  private static Client writer;
  private static RecordingLoadBalancerProvider recording;
  private final List<ManagedChannel> channels = new ArrayList<>();

  @BeforeAll
  static void setUp() {
    recording = RecordingLoadBalancerProvider.register("steelyard_test_recording");
    writer = EtcdConnection.of(etcd.endpoints()).connect();
  }

  @AfterAll
  static void tearDown() {
    writer.close();
    recording.close();
  }

  @AfterEach
  void closeChannels() throws InterruptedException {
    for (ManagedChannel c : channels) {
      c.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  private static String key(String service, int port) {
    return "/services/" + service + "/127.0.0.1:" + port;
  }

  private static String hostPorts() {
    return etcd.endpoints().replace("http://", "");
  }

  private ManagedChannel channel(String service) {
    ManagedChannel c = Grpc.newChannelBuilder(
            "etcd://" + hostPorts() + "/" + service, InsecureChannelCredentials.create())
        .defaultLoadBalancingPolicy(recording.getPolicyName())
        .build();
    channels.add(c);
    c.getState(true); // leave idle: starts the resolver
    return c;
  }

  /** What the channel's balancer last received, as "port|weight" strings. */
  private static List<String> seenBy(String service, int channelIndex) {
    List<RecordingLoadBalancerProvider.Recorder> rs = recording.recorders(service);
    if (rs.size() <= channelIndex || rs.get(channelIndex).latest() == null) {
      return null;
    }
    List<String> out = new ArrayList<>();
    for (EquivalentAddressGroup eag : rs.get(channelIndex).latest()) {
      InetSocketAddress a = (InetSocketAddress) eag.getAddresses().get(0);
      out.add(a.getPort() + "|" + EndpointWeights.weight(eag));
    }
    return out;
  }

  private static List<String> ports(ServiceWatcher w) {
    Snapshot s = w.current();
    return s == null ? null : s.instances().stream()
        .map(i -> i.address().substring(i.address().lastIndexOf(':') + 1) + "|" + i.weight()).toList();
  }

  @Test
  void addWeightChangeAndRemoveEachReachARealChannel() {
    put(writer, key("adds", 7001), "127.0.0.1:7001|1");
    channel("adds");
    await().atMost(Duration.ofSeconds(10)).until(() -> List.of("7001|1").equals(seenBy("adds", 0)));

    put(writer, key("adds", 7002), "127.0.0.1:7002|3");
    await().atMost(Duration.ofSeconds(5)).until(() -> List.of("7001|1", "7002|3").equals(seenBy("adds", 0)));

    put(writer, key("adds", 7001), "127.0.0.1:7001|5");
    await().atMost(Duration.ofSeconds(5)).until(() -> List.of("7001|5", "7002|3").equals(seenBy("adds", 0)));

    delete(writer, key("adds", 7002));
    await().atMost(Duration.ofSeconds(5)).until(() -> List.of("7001|5").equals(seenBy("adds", 0)));

    delete(writer, key("adds", 7001));
    await().atMost(Duration.ofSeconds(5)).until(() -> List.of().equals(seenBy("adds", 0)));
    assertThat(recording.recorders("adds").get(0).errors()).isEmpty();
  }

  @Test
  void eventsWrittenBetweenTheListAndTheWatchAreNotLost() throws Exception {
    put(writer, key("gap", 7001), "127.0.0.1:7001|1");
    AtomicBoolean wroteInTheWindow = new AtomicBoolean();
    // A reader that writes when the watcher asks it to watch: the listing is done, the watch
    // not started yet, so a watch from "now" would miss all three writes. The rest is the
    // production stack (RenewingClient, JetcdReader) on a registry of the test's own.
    Function<EtcdReader, EtcdReader> writingInTheWindow = real -> new EtcdReader() {
      @Override
      public CompletableFuture<Listing> list(String prefix) {
        return real.list(prefix);
      }

      @Override
      public CompletableFuture<Listing> get(String key) {
        return real.get(key);
      }

      @Override
      public CompletableFuture<KeysAt> keysAt(String prefix, long revision) {
        return real.keysAt(prefix, revision);
      }

      @Override
      public Watching watch(String prefix, long fromRevision, WatchCallbacks callbacks) {
        if (wroteInTheWindow.compareAndSet(false, true)) {
          put(writer, key("gap", 7002), "127.0.0.1:7002|2");
          delete(writer, key("gap", 7001));
          put(writer, key("gap", 7003), "127.0.0.1:7003|3");
        }
        return real.watch(prefix, fromRevision, callbacks);
      }

      @Override
      public Watching watchKey(String key, long fromRevision, WatchCallbacks callbacks) {
        return real.watchKey(key, fromRevision, callbacks);
      }
    };
    ScheduledExecutorService thread = Executors.newSingleThreadScheduledExecutor();
    Scheduler scheduler = Scheduler.of(thread);
    EtcdCalls calls = new EtcdCalls(Duration.ofSeconds(5), scheduler::schedule);
    WatchRegistry registry = new WatchRegistry(scheduler, new Random(), Runnable::run, connection ->
        new RenewingClient(
            RenewingClient.renewable(connection, scheduler, Runnable::run),
            client -> writingInTheWindow.apply(new JetcdReader(client, calls))));
    try (ServiceWatcher w = ServiceWatcher.builder(EtcdConnection.of(etcd.endpoints()), "gap")
        .open(registry, s -> {})) {
      await().atMost(Duration.ofSeconds(10)).until(() -> List.of("7002|2", "7003|3").equals(ports(w)));
      assertThat(wroteInTheWindow).isTrue();
    } finally {
      // The watcher's close and the client's close (closer: Runnable::run) are queued on the
      // thread; once a task behind them ran, only the cancelled timers are left.
      thread.submit(() -> {}).get(10, TimeUnit.SECONDS);
      thread.shutdownNow();
      assertThat(registry.clientCount()).isZero();
    }
  }

  @Test
  void malformedValuesAreSkippedCountedAndLeaveOthersAlone() {
    byte[] huge = new byte[1 << 20];
    Arrays.fill(huge, (byte) '7');
    List<byte[]> garbage = List.of(
        new byte[] {(byte) 0xc3, (byte) 0x28, (byte) 0xff},
        "|".getBytes(),
        "127.0.0.1:7009|-1".getBytes(),
        "127.0.0.1:7009|abc".getBytes(),
        "127.0.0.1:7009|99999999999999999999999".getBytes(),
        "{\"Op\":0,\"Addr\":\"127.0.0.1:70".getBytes(),
        huge);
    for (int i = 0; i < garbage.size(); i++) {
      put(writer, "/services/junk/bad" + i, garbage.get(i));
    }
    put(writer, key("junk", 7001), "127.0.0.1:7001|4");
    long before = DiscoveryStats.malformedValues();
    try (ServiceWatcher w = ServiceWatcher.open(
        EtcdConnection.of(etcd.endpoints()), KeyLayout.defaults(), "junk", s -> {})) {
      await().atMost(Duration.ofSeconds(10)).until(() -> List.of("7001|4").equals(ports(w)));
      assertThat(w.malformedCount()).isEqualTo(garbage.size());
      assertThat(w.current().malformed()).extracting(Snapshot.MalformedKey::key)
          .containsExactly(IntStream.range(0, garbage.size()).mapToObj(i -> "/services/junk/bad" + i)
              .toArray(String[]::new));
      assertThat(w.current().malformed().get(0).reason()).isEqualTo("'value is not valid UTF-8'");
      assertThat(w.current().malformed().get(6).reason()).startsWith("'value of 1048576 bytes");

      // Through the watch path too, and a good change right behind it still flows.
      put(writer, "/services/junk/bad-live\nWARN forged", "127.0.0.1:7010|x");
      put(writer, key("junk", 7002), "127.0.0.1:7002|1");
      await().atMost(Duration.ofSeconds(5)).until(() -> List.of("7001|4", "7002|1").equals(ports(w)));
      assertThat(w.malformedCount()).isEqualTo(garbage.size() + 1);
      assertThat(DiscoveryStats.malformedValues() - before).isEqualTo(garbage.size() + 1);
      assertThat(w.current().malformed()).hasSize(garbage.size() + 1)
          .anySatisfy(m -> {
            assertThat(m.key()).isEqualTo("/services/junk/bad-live\nWARN forged"); // as stored
            assertThat(m.reason()).isEqualTo("'pipe value: weight 'x' (expected: an integer 0..1000000)'");
          });

      // Deleted or repaired, a key leaves the list, and listeners hear about it.
      delete(writer, "/services/junk/bad0");
      put(writer, "/services/junk/bad1", "127.0.0.1:7003|2");
      await().atMost(Duration.ofSeconds(5)).until(() -> w.current().malformed().size() == garbage.size() - 1);
      assertThat(ports(w)).containsExactly("7001|4", "7002|1", "7003|2");
    }
  }

  @Test
  void twoChannelsToOneTargetShareOneWatchAndOneClient() {
    put(writer, key("shared", 7001), "127.0.0.1:7001|1");
    await().atMost(Duration.ofSeconds(10)).until(() -> DiscoveryStats.activeWatches() == 0);
    channel("shared");
    channel("shared");
    await().atMost(Duration.ofSeconds(10))
        .until(() -> List.of("7001|1").equals(seenBy("shared", 0)) && List.of("7001|1").equals(seenBy("shared", 1)));
    assertThat(DiscoveryStats.activeWatches()).isEqualTo(1);
    assertThat(DiscoveryStats.openEtcdWatches()).isEqualTo(1);
    assertThat(DiscoveryStats.etcdClients()).isEqualTo(1);

    // Another service on the same etcd: a second watch, still one client.
    channel("shared2");
    await().atMost(Duration.ofSeconds(10)).until(() -> DiscoveryStats.openEtcdWatches() == 2);
    assertThat(DiscoveryStats.activeWatches()).isEqualTo(2);
    assertThat(DiscoveryStats.etcdClients()).isEqualTo(1);

    // Last user gone: watch and client released.
    channels.forEach(ManagedChannel::shutdownNow);
    await().atMost(Duration.ofSeconds(10)).until(() ->
        DiscoveryStats.activeWatches() == 0 && DiscoveryStats.openEtcdWatches() == 0
            && DiscoveryStats.etcdClients() == 0);
  }

  @Test
  void aChannelThatNeverHadAListGetsUnavailable() {
    // Nothing listens on port 1: the list fails, and the channel is told why.
    ManagedChannel c = Grpc.newChannelBuilder("etcd://127.0.0.1:1/nolist", InsecureChannelCredentials.create())
        .defaultLoadBalancingPolicy(recording.getPolicyName())
        .build();
    channels.add(c);
    c.getState(true);
    await().atMost(Duration.ofSeconds(30))
        .until(() -> !recording.recorders("nolist").isEmpty()
            && !recording.recorders("nolist").get(0).errors().isEmpty());
    Status error = recording.recorders("nolist").get(0).errors().get(0);
    assertThat(error.getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(error.getDescription()).contains("nolist").contains("127.0.0.1:1");
    assertThat(recording.recorders("nolist").get(0).updates()).isEmpty();
  }

  @Test
  void aDeployOfAHundredInstancesYieldsAHandfulOfSnapshotsNotAHundred() throws Exception {
    List<Snapshot> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
    try (ServiceWatcher w = ServiceWatcher.open(
        EtcdConnection.of(etcd.endpoints()), KeyLayout.defaults(), "deploy", seen::add)) {
      await().atMost(Duration.ofSeconds(10)).until(() -> seen.size() == 1); // the empty listing
      List<java.util.concurrent.CompletableFuture<?>> puts = new ArrayList<>();
      for (int i = 0; i < 100; i++) {
        int port = 8000 + i;
        puts.add(writer.getKVClient().put(Etcd.bytes(key("deploy", port)), Etcd.bytes("127.0.0.1:" + port + "|1")));
      }
      java.util.concurrent.CompletableFuture.allOf(puts.toArray(java.util.concurrent.CompletableFuture[]::new))
          .get(20, TimeUnit.SECONDS);
      await().atMost(Duration.ofSeconds(10)).until(() -> w.current().instances().size() == 100);
      assertThat(seen.size() - 1).as("snapshots for 100 puts").isBetween(1, 25);
      // Each snapshot is complete and consistent: sizes only grow during an add-only deploy.
      for (int i = 1; i < seen.size(); i++) {
        assertThat(seen.get(i).instances().size()).isGreaterThanOrEqualTo(seen.get(i - 1).instances().size());
      }
    }
  }

  @Test
  void aProgrammaticProviderServesTripleSlashTargetsFromItsConnection() {
    io.grpc.NameResolverRegistry registry = io.grpc.NameResolverRegistry.getDefaultRegistry();
    EtcdNameResolverProvider provider = EtcdNameResolverProvider.builder()
        .connection(EtcdConnection.of(etcd.endpoints()))
        .priority(EtcdNameResolverProvider.CONFIGURED_PRIORITY)
        .build();
    registry.register(provider);
    try {
      put(writer, key("configured", 7001), "127.0.0.1:7001|2");
      ManagedChannel c = Grpc.newChannelBuilder("etcd:///configured", InsecureChannelCredentials.create())
          .defaultLoadBalancingPolicy(recording.getPolicyName())
          .build();
      channels.add(c);
      c.getState(true);
      await().atMost(Duration.ofSeconds(10)).until(() -> List.of("7001|2").equals(seenBy("configured", 0)));
    } finally {
      registry.deregister(provider);
    }
  }

  @Test
  void serviceWatcherSeesJsonMetadata() {
    put(writer, key("meta", 7001),
        "{\"Op\":0,\"Addr\":\"127.0.0.1:7001\",\"Metadata\":{\"weight\":6,\"zone\":\"b\"}}");
    try (ServiceWatcher w = ServiceWatcher.open(
        EtcdConnection.of(etcd.endpoints()), KeyLayout.defaults(), "meta", s -> {})) {
      await().atMost(Duration.ofSeconds(10)).until(() -> w.current() != null);
      assertThat(w.current().instances()).containsExactly(
          new ServiceInstance("meta", "127.0.0.1:7001", 6, java.util.Map.of("zone", "b")));
      assertThat(w.current().isStale()).isFalse();
    }
  }
}
