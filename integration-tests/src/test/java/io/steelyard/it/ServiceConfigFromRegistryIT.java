package io.steelyard.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthGrpc;
import io.steelyard.discovery.EtcdNameResolverProvider;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.grpc.CountingHealthServers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;

/**
 * A service's policy set once in the registry: {@code steelyard config set} changes the policy of
 * a running channel without a restart, a config the CLI refuses never reaches etcd, one written
 * straight into etcd that grpc refuses is ignored with the last good one kept, and a deleted one
 * gives the channel its fallback back. The policy in force is read from where the calls land:
 * {@code pick_first} sends every call to one server, {@code weighted_round_robin_static} splits 400
 * calls over weights 1 and 3 exactly 100/300, {@code weighted_random} about 1:3 to both.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ServiceConfigFromRegistryIT {

  private static final String PICK_FIRST = "{\"loadBalancingConfig\":[{\"pick_first\":{}}]}";
  private static final String ROUND_ROBIN =
      "{\"loadBalancingConfig\":[{\"weighted_round_robin_static\":{}}]}";
  /** Refused by the balancer's parser (2..10). */
  private static final String BAD_CHOICE_COUNT =
      "{\"loadBalancingConfig\":[{\"weighted_least_request\":{\"choiceCount\":11}}]}";

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  private final CountingHealthServers servers = new CountingHealthServers();
  private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
  private final Logger choiceLogger =
      (Logger) LoggerFactory.getLogger("io.steelyard.discovery.ServiceConfigChoice");
  private ManagedChannel channel;
  private Client writer;
  private String service;

  @BeforeEach
  void setUp(TestInfo test) {
    service = test.getTestMethod().orElseThrow().getName();
    writer = EtcdConnection.of(etcd.endpoints()).connect();
    logs.start();
    choiceLogger.addAppender(logs);
  }

  @AfterEach
  void tearDown() throws InterruptedException {
    choiceLogger.detachAppender(logs);
    if (channel != null) {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
    servers.close();
    writer.close();
  }

  @Test
  void configSetWithTheCliChangesTheRunningChannelsPolicy() throws Exception {
    HealthGrpc.HealthBlockingStub stub = twoServersWeighted1And3();

    // Nothing stored, nothing named by the channel: weighted_random, both servers get calls.
    int[] fallback = servers.callAndCount(stub, 400);
    assertThat(fallback[1]).as("weighted_random over 1:3: %s", Arrays.toString(fallback)).isBetween(240, 360);

    assertThat(cli("config", "set", service, PICK_FIRST).exitCode()).isZero();
    await().atMost(Duration.ofSeconds(10)).until(() -> oneServerTakesAll(servers.callAndCount(stub, 40)));

    assertThat(cli("config", "set", service, ROUND_ROBIN).exitCode()).isZero();
    awaitExactRoundRobin(stub);
  }

  @Test
  void aConfigTheCliRefusesExitsTwoAndLeavesEtcdUntouched() throws Exception {
    assertThat(cli("config", "set", service, ROUND_ROBIN).exitCode()).isZero();
    KeyValue before = configKey();

    Cli.Result r = cli("config", "set", service, BAD_CHOICE_COUNT);

    assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
    assertThat(r.stderr()).contains("weighted_least_request.choiceCount: 11");
    assertThat(r.stderr().lines().filter(l -> l.startsWith("steelyard: ")).count()).isEqualTo(1);
    KeyValue after = configKey();
    assertThat(after.getModRevision()).isEqualTo(before.getModRevision());
    assertThat(after.getValue().toString(StandardCharsets.UTF_8)).isEqualTo(ROUND_ROBIN);
  }

  @Test
  void aBadConfigWrittenStraightIntoEtcdIsIgnoredAndTheLastGoodOneStays() throws Exception {
    HealthGrpc.HealthBlockingStub stub = twoServersWeighted1And3();
    assertThat(cli("config", "set", service, ROUND_ROBIN).exitCode()).isZero();
    awaitExactRoundRobin(stub);

    long bad = put("/services/.config/" + service, BAD_CHOICE_COUNT);
    await().atMost(Duration.ofSeconds(10)).until(() -> ignoredLines(bad) == 1);
    assertThat(servers.callAndCount(stub, 400)).as("still weighted_round_robin_static").containsExactly(100, 300);

    long garbled = put("/services/.config/" + service, "{\"loadBalancingConfig\":");
    await().atMost(Duration.ofSeconds(10)).until(() -> ignoredLines(garbled) == 1);
    assertThat(servers.callAndCount(stub, 400)).containsExactly(100, 300);

    // A good config after the bad ones applies.
    put("/services/.config/" + service, PICK_FIRST);
    await().atMost(Duration.ofSeconds(10)).until(() -> oneServerTakesAll(servers.callAndCount(stub, 40)));
    assertThat(ignoredLines(bad)).as("one line per bad revision").isEqualTo(1);
  }

  @Test
  void aChannelOpenedWhileABadConfigIsStoredRunsTheConfigTheOtherChannelsRun() throws Exception {
    HealthGrpc.HealthBlockingStub stub = twoServersWeighted1And3();
    assertThat(cli("config", "set", service, ROUND_ROBIN).exitCode()).isZero();
    awaitExactRoundRobin(stub);
    long bad = put("/services/.config/" + service, BAD_CHOICE_COUNT);
    await().atMost(Duration.ofSeconds(10)).until(() -> ignoredLines(bad) == 1);

    ManagedChannel second = Grpc.newChannelBuilder(target(), InsecureChannelCredentials.create()).build();
    try {
      HealthGrpc.HealthBlockingStub secondStub = HealthGrpc.newBlockingStub(second).withWaitForReady();
      // weighted_round_robin_static, not the weighted_random fallback (which would rarely give
      // exactly 1:3 twice in 400 calls).
      awaitExactRoundRobin(secondStub);
      assertThat(servers.callAndCount(secondStub, 400)).containsExactly(100, 300);
    } finally {
      second.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  @Test
  void aDeletedConfigGivesTheChannelItsFallbackBack() throws Exception {
    HealthGrpc.HealthBlockingStub stub = twoServersWeighted1And3();
    assertThat(cli("config", "set", service, PICK_FIRST).exitCode()).isZero();
    await().atMost(Duration.ofSeconds(10)).until(() -> oneServerTakesAll(servers.callAndCount(stub, 40)));

    Cli.Result r = cli("config", "delete", service);

    assertThat(r.exitCode()).as(r.toString()).isZero();
    await().atMost(Duration.ofSeconds(10)).until(() -> {
      int[] c = servers.callAndCount(stub, 40);
      return c[0] > 0 && c[1] > 0;
    });
  }

  @Test
  void aChannelThatDisablesLookupsKeepsItsOwnPolicy() throws Exception {
    int a = servers.start();
    int b = servers.start();
    register(a, 1);
    register(b, 3);
    assertThat(cli("config", "set", service, PICK_FIRST).exitCode()).isZero();
    channel = Grpc.newChannelBuilder(target(), InsecureChannelCredentials.create())
        .disableServiceConfigLookUp()
        .defaultServiceConfig(Map.of("loadBalancingConfig", List.of(Map.of("weighted_round_robin_static", Map.of()))))
        .build();
    HealthGrpc.HealthBlockingStub stub = HealthGrpc.newBlockingStub(channel).withWaitForReady();

    awaitExactRoundRobin(stub);
  }

  @Test
  void withAnEmptyFallbackTheChannelsOwnDefaultAppliesUntilAConfigIsStored() throws Exception {
    int a = servers.start();
    int b = servers.start();
    register(a, 1);
    register(b, 3);
    channel = Grpc.newChannelBuilder(target(), InsecureChannelCredentials.create())
        .defaultServiceConfig(Map.of("loadBalancingConfig", List.of(Map.of("weighted_round_robin_static", Map.of()))))
        .setNameResolverArg(EtcdNameResolverProvider.FALLBACK_SERVICE_CONFIG, Map.of())
        .build();
    HealthGrpc.HealthBlockingStub stub = HealthGrpc.newBlockingStub(channel).withWaitForReady();
    awaitExactRoundRobin(stub);

    assertThat(cli("config", "set", service, PICK_FIRST).exitCode()).isZero();

    await().atMost(Duration.ofSeconds(10)).until(() -> oneServerTakesAll(servers.callAndCount(stub, 40)));
  }

  // ------------------------------------------------------------------ helpers

  private HealthGrpc.HealthBlockingStub twoServersWeighted1And3() throws Exception {
    int a = servers.start();
    int b = servers.start();
    register(a, 1);
    register(b, 3);
    channel = Grpc.newChannelBuilder(target(), InsecureChannelCredentials.create()).build();
    HealthGrpc.HealthBlockingStub stub = HealthGrpc.newBlockingStub(channel).withWaitForReady();
    await().atMost(Duration.ofSeconds(10)).until(() -> {
      int[] c = servers.callAndCount(stub, 8);
      return c[0] > 0 && c[1] > 0;
    });
    return stub;
  }

  /** Both READY under weighted_round_robin_static: every 4 picks give 1 and 3. */
  private void awaitExactRoundRobin(HealthGrpc.HealthBlockingStub stub) {
    await().atMost(Duration.ofSeconds(10)).until(() -> Arrays.equals(servers.callAndCount(stub, 40), new int[] {10, 30}));
    assertThat(servers.callAndCount(stub, 400)).containsExactly(100, 300);
  }

  private static boolean oneServerTakesAll(int[] c) {
    return c[0] == 0 || c[1] == 0;
  }

  private long ignoredLines(long revision) {
    return logs.list.stream()
        .map(ILoggingEvent::getFormattedMessage)
        .filter(m -> m.startsWith("Ignoring the service config of " + service + " stored at revision " + revision + ":"))
        .count();
  }

  private Cli.Result cli(String... args) throws Exception {
    return Cli.run(etcd.endpoints(), args);
  }

  private String target() {
    return "etcd://" + etcd.endpoints().replace("http://", "") + "/" + service;
  }

  private void register(int port, int weight) throws Exception {
    put("/services/" + service + "/127.0.0.1:" + port, "127.0.0.1:" + port + "|" + weight);
  }

  private KeyValue configKey() throws Exception {
    List<KeyValue> kvs = writer.getKVClient()
        .get(ByteSequence.from("/services/.config/" + service, StandardCharsets.UTF_8))
        .get(10, TimeUnit.SECONDS).getKvs();
    assertThat(kvs).hasSize(1);
    return kvs.get(0);
  }

  private long put(String key, String value) throws Exception {
    return writer.getKVClient()
        .put(ByteSequence.from(key, StandardCharsets.UTF_8), ByteSequence.from(value, StandardCharsets.UTF_8))
        .get(10, TimeUnit.SECONDS)
        .getHeader().getRevision();
   }
}
