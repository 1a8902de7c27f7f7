package io.steelyard.it.faults;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.LeaseOption;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.StatusRuntimeException;
import io.steelyard.agent.RegistrationState;
import io.steelyard.discovery.EtcdNameResolverProvider;
import io.steelyard.examples.GreeterClient;
import io.steelyard.examples.proto.GreeterGrpc;
import io.steelyard.examples.proto.HelloRequest;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ValueCodec;
import io.steelyard.registry.admin.InstanceStore;
import io.steelyard.registry.admin.InstanceWrite;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.EtcdMember;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One fault case's world: three agent-registered greeter servers (weights 1, 2, 5, TTL 5 s) and
 * three clients, each a real channel to {@code etcd:///SERVICE} with {@code weighted_random},
 * client-side health checking, <b>retries disabled</b> and <b>no wait-for-ready</b>, sending a
 * steady {@value #CALLS_PER_SECOND} calls/s. Every server and every client reaches etcd through
 * a {@link Route} of its own, so a case can pin server i and client i to one member ("home")
 * while they connect, and know where their streams are.
 *
 * <p>The one masking left is the warm-up: before the load starts, each client makes uncounted
 * wait-for-ready calls until every server has answered, because a fresh channel has no
 * connection yet and a call without wait-for-ready would fail on that alone.
 *
 * <p>A case then breaks etcd, marks {@link #faultStarts()} and {@link #etcdHealthy}, and calls
 * {@link #verifyRecovery}, which checks the same promises for every case and writes the figures.
 */
final class Fleet implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(Fleet.class);

  static final Duration TTL = Duration.ofSeconds(5);
  static final int[] WEIGHTS = {1, 2, 5};
  static final int CALLS_PER_SECOND = 50;
  /** Bound for re-registration once etcd is healthy: the TTL + 2 s. */
  static final Duration REREGISTER_BOUND = TTL.plusSeconds(2);
  /** Bound for a weight change to reach every client when etcd is healthy; generous for CI. */
  static final Duration PROPAGATION_BOUND = Duration.ofSeconds(10);
  static final int UNPINNED = -1;

  private final EtcdCluster etcd;
  private final String service;
  private final int[] homes;
  private final List<Route> routes = new ArrayList<>();
  private final List<FleetServer> servers = new ArrayList<>();
  private final List<ManagedChannel> channels = new ArrayList<>();
  private final List<ViewRecorder> views = new ArrayList<>();
  private final List<PacedLoad> loads = new ArrayList<>();
  private final Client truth;
  private final ExecutorService background = Executors.newSingleThreadExecutor(r -> {
    Thread t = new Thread(r, "fleet-background");
    t.setDaemon(true);
    return t;
  });
  private final Map<String, String> figures = new LinkedHashMap<>();
  private long faultNanos;
  private long healthyNanos;
  private long faultEndNanos;
  private boolean verified; // figures are written only for a case that got through verifyRecovery
  private List<String> expiredKeysSeen = List.of(); // by verifyRecovery: servers clients saw leave

  private Fleet(EtcdCluster etcd, String service, int[] homes) {
    this.etcd = etcd;
    this.service = service;
    this.homes = homes.clone();
    this.truth = EtcdConnection.of(etcd.endpoints()).connect();
  }

  /**
   * Starts the fleet; {@code homes[i]} is the member server i and client i may reach while they
   * connect ({@link #UNPINNED}: all of them). Returns once every client calls every server.
   */
  static Fleet start(EtcdCluster etcd, String service, int... homes) {
    if (homes.length != WEIGHTS.length) {
      throw new IllegalArgumentException("homes: " + homes.length + " (expected: " + WEIGHTS.length + ")");
    }
    Fleet fleet = new Fleet(etcd, service, homes);
    try {
      fleet.startAll();
      return fleet;
    } catch (RuntimeException | Error e) {
      try {
        fleet.close();
      } catch (InterruptedException ie) {
        Thread.currentThread().interrupt();
        e.addSuppressed(ie);
      }
      throw e;
    }
  }

  private void startAll() {
    for (int i = 0; i < WEIGHTS.length; i++) {
      Route route = new Route(etcd, service + "-server" + i);
      routes.add(route);
      pin(route, homes[i]);
      servers.add(FleetServer.start(route.endpoints(), service, WEIGHTS[i], TTL));
    }
    for (int i = 0; i < WEIGHTS.length; i++) {
      Route route = new Route(etcd, service + "-client" + i);
      routes.add(route);
      pin(route, homes[i]);
      EtcdConnection connection = EtcdConnection.of(route.endpoints());
      ManagedChannel channel = channel(connection, service);
      channels.add(channel);
      views.add(new ViewRecorder("client" + i, connection, service));
      warmUp(channel, servers.size());
    }
    awaitStreamsOnHomes();
    routes.forEach(Route::all);
    for (int i = 0; i < channels.size(); i++) {
      loads.add(PacedLoad.start(service + "-client" + i, channels.get(i),
          Duration.ofNanos(TimeUnit.SECONDS.toNanos(1) / CALLS_PER_SECOND), Duration.ofSeconds(5)));
    }
    await().atMost(Duration.ofSeconds(30)).until(() -> loads.stream().allMatch(l -> l.succeeded() >= 20));
    log.info("fleet {}: servers {} (weights {}), homes {}", service, addresses(),
        java.util.Arrays.toString(WEIGHTS), java.util.Arrays.toString(homes));
  }

  /**
   * A client channel as the suite uses it: {@code etcd:///SERVICE} through a provider of its own
   * {@code connection}, {@code weighted_random}, client-side health checking, retries disabled.
   *
   * <p>Not {@code etcd://H1:P1,H2:P2/SERVICE}: grpc-java 1.85 parses targets as RFC 3986 URIs by
   * default ({@code GRPC_ENABLE_RFC3986_URIS}), and a host list with ports is no RFC 3986
   * authority, so such a channel fails to build ("Could not find a NameResolverProvider"). A
   * per-channel factory is also the only way to give channels of one process their own
   * connection.
   */
  @SuppressWarnings("deprecation") // nameResolverFactory: no per-channel registry in the API
  static ManagedChannel channel(EtcdConnection connection, String service) {
    return ManagedChannelBuilder.forTarget("etcd:///" + service)
        .nameResolverFactory(EtcdNameResolverProvider.builder().connection(connection).build())
        .usePlaintext()
        .disableServiceConfigLookUp()
        .defaultServiceConfig(GreeterClient.serviceConfig("weighted_random", false, true))
        .disableRetry()
        .build();
  }

  private static void pin(Route route, int home) {
    if (home != UNPINNED) {
      route.only(home);
    }
  }

  /** Uncounted wait-for-ready calls until {@code servers} servers answered (see the class comment). */
  static void warmUp(ManagedChannel channel, int servers) {
    channel.getState(true);
    Set<String> answered = new HashSet<>();
    GreeterGrpc.GreeterBlockingStub stub = GreeterGrpc.newBlockingStub(channel).withWaitForReady();
    // A warm-up call that ends early (the first resolution of a freshly started cluster can take
    // seconds on a loaded machine, past the service config's per-call timeout) is retried, not a
    // failure: only the condition counts, bounded by the 30 s.
    await().atMost(Duration.ofSeconds(30))
        .ignoreExceptionsInstanceOf(StatusRuntimeException.class)
        .until(() -> {
          answered.add(stub.withDeadlineAfter(5, TimeUnit.SECONDS)
              .sayHello(HelloRequest.newBuilder().setName("warm-up").build()).getServerAddress());
          return answered.size() == servers && channel.getState(false) == ConnectivityState.READY;
        });
  }

  /**
   * Waits until each home member carries the streams pinned to it, as etcd itself counts them:
   * one watch per client and per agent, one lease keepalive per agent.
   */
  private void awaitStreamsOnHomes() {
    for (int m = 0; m < etcd.size(); m++) {
      int member = m;
      long pinned = java.util.Arrays.stream(homes).filter(h -> h == member).count();
      if (pinned == 0) {
        continue;
      }
      EtcdMember em = etcd.member(m);
      await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
        assertThat(watchStreams(em)).as("watch streams on home %s", em.name()).isGreaterThanOrEqualTo(2 * pinned);
        assertThat(keepaliveStreams(em)).as("keepalive streams on home %s", em.name()).isGreaterThanOrEqualTo(pinned);
      });
    }
  }

  static double watchStreams(EtcdMember m) {
    return m.metric("etcd_debugging_mvcc_watch_stream_total");
  }

  static double keepaliveStreams(EtcdMember m) {
    return m.metric("grpc_server_started_total", "grpc_method", "LeaseKeepAlive")
        - m.metric("grpc_server_handled_total", "grpc_method", "LeaseKeepAlive");
  }

  // ------------------------------------------------------------------ accessors

  String service() {
    return service;
  }

  /**
   * The removals {@link #verifyRecovery} saw clients make (each a key that truly expired in etcd),
   * as {@code client:address gone@+ms back@+ms}; empty when no server left any view.
   */
  List<String> expiredKeysSeen() {
    return expiredKeysSeen;
  }

  FleetServer server(int i) {
    return servers.get(i);
  }

  List<String> addresses() {
    return servers.stream().map(FleetServer::address).toList();
  }

  List<ViewRecorder> views() {
    return views;
  }

  List<PacedLoad> loads() {
    return loads;
  }

  Client truth() {
    return truth;
  }

  /** Records a figure for the case's line in {@code target/fault-figures/}. */
  void figure(String name, Object value) {
    figures.put(name, String.valueOf(value));
  }

  // ------------------------------------------------------------------ the fault's timeline

  void faultStarts() {
    faultNanos = System.nanoTime();
  }

  long faultNanos() {
    return faultNanos;
  }

  /** The fault is over (member back, partition healed, ...): the end of "during the fault". */
  void faultEnds() {
    faultEndNanos = System.nanoTime();
  }

  /** Waits until every running member is healthy with a leader, and marks the moment. */
  void etcdHealthy(Duration bound) {
    if (faultEndNanos == 0) {
      faultEnds();
    }
    etcd.awaitHealthy(bound);
    healthyNanos = System.nanoTime();
    figure("fault-ms", millis(faultEndNanos - faultNanos));
  }

  /**
   * Changes server {@code i}'s weight through its agent and waits until every client's view has
   * it; returns each client's delay, counted from just before the write.
   */
  Map<String, Duration> changeWeightAndAwait(int i, int weight, Duration bound) {
    long began = System.nanoTime(); // the view may change before the agent's write returns
    // Logged either way: a first write that fails (the agent's connection still coming back) is
    // retried by the agent, and the log says which of the two a slow propagation was.
    servers.get(i).setWeight(weight).whenComplete((v, t) -> {
      long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - began);
      if (t == null) {
        log.info("agent of {} wrote weight {} in {} ms", servers.get(i).address(), weight, ms);
      } else {
        log.warn("agent of {} could not write weight {} at first ({} ms): {}", servers.get(i).address(), weight, ms, t.toString());
      }
    });
    return awaitWeightEverywhere(servers.get(i).address(), weight, began, bound);
  }

  Map<String, Duration> awaitWeightEverywhere(String address, int weight, long sinceNanos, Duration bound) {
    Map<String, Duration> delays = new TreeMap<>();
    for (ViewRecorder v : views) {
      await().atMost(bound).pollInterval(Duration.ofMillis(20))
          .until(() -> v.firstAtOrAfter(sinceNanos, w -> Integer.valueOf(weight).equals(w.get(address))) >= 0);
      delays.put(v.name(), Duration.ofNanos(
          v.firstAtOrAfter(sinceNanos, w -> Integer.valueOf(weight).equals(w.get(address))) - sinceNanos));
    }
    return delays;
  }

  /**
   * An operator changes server {@code i}'s weight while the fault holds, through the members in
   * {@code via} (the healthy majority), with the CLI's write path: lease-preserving and
   * revision-guarded ({@link InstanceStore}); the agent adopts the weight from its watch. Retried
   * until etcd acknowledges it (the majority may still be electing a leader); returns when the
   * successful attempt began, the start of the clock for {@link #awaitChangeDuringFault}.
   *
   * <p>Not through the agent: its client also reaches the broken member, and a call that lands
   * there waits out the operation timeout, which would measure the agent, not the clients.
   */
  long changeWeightDuringFault(int i, int weight, List<EtcdMember> via) {
    String address = servers.get(i).address();
    long[] began = new long[1];
    try (Client client = Client.builder()
        .endpoints(via.stream().map(EtcdMember::clientEndpoint).toArray(java.net.URI[]::new)).build()) {
      InstanceStore store = new InstanceStore(client, KeyLayout.defaults(), Duration.ofSeconds(2));
      await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() -> {
        began[0] = System.nanoTime();
        store.apply(InstanceWrite.setWeight(service, address, weight));
        return true;
      });
    }
    return began[0];
  }

  /**
   * {@link #changeWeightDuringFault} on another thread, for a fault that must last a fixed time
   * whatever the write costs.
   */
  CompletableFuture<Long> changeWeightDuringFaultAsync(int i, int weight, List<EtcdMember> via) {
    return CompletableFuture.supplyAsync(() -> changeWeightDuringFault(i, weight, via), background);
  }


  /**
   * Waits until the change {@link #changeWeightDuringFault} wrote at {@code sinceNanos} reached
   * every client; the delays are the case's "staleness during the fault" figure.
   */
  Map<String, Duration> awaitChangeDuringFault(int i, int weight, long sinceNanos, Duration bound) {
    Map<String, Duration> delays = awaitWeightEverywhere(servers.get(i).address(), weight, sinceNanos, bound);
    figure("weight-change-during-ms", delays.entrySet().stream()
        .map(e -> e.getKey() + ":" + e.getValue().toMillis()).collect(Collectors.joining(",")));
    return delays;
  }

  // ------------------------------------------------------------------ the promises of every case

  /**
   * For every case, once etcd is healthy again ({@link #etcdHealthy}): every server is registered
   * again within TTL + 2 s; a weight change made now reaches every client; no call failed; no
   * client saw a server disappear unless its key truly expired in etcd (then it must be back);
   * each client's final view equals etcd's. {@link #close()} then writes the case's figures.
   *
   * @param afterWeight the new weight of server 0, different from its current one
   */
  void verifyRecovery(int afterWeight) throws Exception {
    assertThat(healthyNanos).as("etcdHealthy() first").isPositive();
    Duration reregistered = awaitRegistered(REREGISTER_BOUND);
    figure("reregistered-after-healthy-ms", reregistered.toMillis());

    Map<String, Duration> propagation = changeWeightAndAwait(0, afterWeight, PROPAGATION_BOUND);
    figure("weight-change-after-ms", maxMillis(propagation));

    long sent = loads.stream().mapToLong(PacedLoad::sent).sum();
    List<PacedLoad.Failure> failed = loads.stream().flatMap(l -> l.failures().stream()).toList();
    figure("calls-sent", sent);
    figure("calls-failed", failed.size());
    assertThat(failed).as("failed calls (no retries, no wait-for-ready)").isEmpty();

    List<String> expired = checkRemovals();
    expiredKeysSeen = List.copyOf(expired);
    figure("expired-keys-seen", expired.isEmpty() ? "none" : expired);

    awaitViewsEqualEtcd(PROPAGATION_BOUND);
    for (ViewRecorder v : views) {
      figure("stale-ms-" + v.name(), v.staleSince(faultNanos).toMillis());
      figure("fresh-after-fault-end-ms-" + v.name(), millis(v.firstFreshAtOrAfter(faultEndNanos) - faultEndNanos));
    }
    verified = true;
  }

  /**
   * Every agent is REGISTERED and etcd holds its key with the agent's current lease, alive,
   * measured from the moment etcd was healthy.
   */
  Duration awaitRegistered(Duration bound) {
    await().atMost(bound).pollInterval(Duration.ofMillis(50)).ignoreExceptions().until(this::allRegistered);
    return Duration.ofNanos(System.nanoTime() - healthyNanos);
  }

  private boolean allRegistered() throws Exception {
    for (FleetServer s : servers) {
      long lease = s.leaseId();
      if (s.state() != RegistrationState.REGISTERED || lease == 0) {
        return false;
      }
      List<KeyValue> kvs = truth.getKVClient().get(key(s.address())).get(2, TimeUnit.SECONDS).getKvs();
      if (kvs.isEmpty() || kvs.get(0).getLease() != lease) {
        return false;
      }
      if (truth.getLeaseClient().timeToLive(lease, LeaseOption.DEFAULT).get(2, TimeUnit.SECONDS).getTTL() <= 0) {
        return false;
      }
    }
    return true;
  }

  /**
   * A server leaving a client's view is a DELETE reaching it. None of our servers stopped, so
   * each such removal must be a key that truly expired in etcd (absent at the view's revision),
   * and the server must be back in that client's view. Returns what was seen, for the figures.
   */
  private List<String> checkRemovals() throws Exception {
    List<String> seen = new ArrayList<>();
    Set<String> ours = new HashSet<>(addresses());
    for (ViewRecorder v : views) {
      for (ViewRecorder.Removal r : v.removalsSince(0)) {
        if (!ours.contains(r.address())) {
          continue;
        }
        List<KeyValue> atRevision = truth.getKVClient()
            .get(key(r.address()), GetOption.builder().withRevision(r.revision()).build())
            .get(5, TimeUnit.SECONDS).getKvs();
        assertThat(atRevision)
            .as("%s saw %s removed at revision %d: etcd must not have had the key then", v.name(), r.address(), r.revision())
            .isEmpty();
        assertThat(v.weights()).as("%s: %s is back after its key expired", v.name(), r.address()).containsKey(r.address());
        seen.add(v.name() + ":" + r.address() + " gone@+" + millis(r.nanos() - faultNanos) + "ms back@+"
            + millis(v.firstWithAfter(r.nanos(), r.address()) - faultNanos) + "ms");
      }
    }
    if (!seen.isEmpty()) {
      log.warn("fleet {}: keys expired in etcd during the fault and reached clients as DELETEs: {}", service, seen);
    }
    return seen;
  }

  /** Each client's latest view equals what etcd holds for the service. */
  void awaitViewsEqualEtcd(Duration bound) {
    await().atMost(bound).pollInterval(Duration.ofMillis(50)).ignoreExceptions().untilAsserted(() -> {
      Map<String, Integer> etcdView = etcdWeights();
      for (ViewRecorder v : views) {
        assertThat(v.weights()).as("%s's view vs etcd", v.name()).isEqualTo(etcdView);
        assertThat(v.stale()).as("%s stale", v.name()).isFalse();
      }
    });
  }

  /** address → weight of every acceptable value under the service's prefix, as etcd has it now. */
  Map<String, Integer> etcdWeights() throws Exception {
    Map<String, Integer> out = new TreeMap<>();
    String prefix = KeyLayout.defaults().servicePrefix(service);
    for (KeyValue kv : truth.getKVClient()
        .get(bytes(prefix), GetOption.builder().isPrefix(true).build()).get(5, TimeUnit.SECONDS).getKvs()) {
      if (ValueCodec.decode(kv.getValue().getBytes()) instanceof DecodedValue.Accepted a) {
        out.putIfAbsent(a.address(), a.weight());
      }
    }
    return out;
  }

  ByteSequence key(String address) {
    return bytes(KeyLayout.defaults().instanceKey(service, address));
  }

  static ByteSequence bytes(String s) {
    return ByteSequence.from(s, UTF_8);
  }

  static long millis(long nanos) {
    return TimeUnit.NANOSECONDS.toMillis(nanos);
  }

  static long maxMillis(Map<String, Duration> delays) {
    return delays.values().stream().mapToLong(Duration::toMillis).max().orElse(-1);
  }

  private void writeFigures() {
    String line = service + " " + figures.entrySet().stream()
        .map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining(" "));
    log.info("FIGURES {}", line);
    try {
      Path dir = Path.of("target", "fault-figures");
      Files.createDirectories(dir);
      Files.writeString(dir.resolve(service + ".txt"), line + "\n", UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public void close() throws InterruptedException {
    if (verified) {
      writeFigures();
    }
    for (PacedLoad l : loads) {
      l.close();
    }
    views.forEach(ViewRecorder::close);
    for (ManagedChannel c : channels) {
      c.shutdownNow();
      c.awaitTermination(5, TimeUnit.SECONDS);
    }
    servers.forEach(FleetServer::shutdownNow);
    background.shutdownNow();
    truth.close();
    routes.forEach(Route::close);
  }
}
