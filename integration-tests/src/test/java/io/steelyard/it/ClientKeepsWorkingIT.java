package io.steelyard.it;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.PutOption;
import io.steelyard.examples.GreeterClient;
import io.steelyard.examples.GreeterServer;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.ServiceInstance;
import io.steelyard.registry.ValueCodec;
import io.steelyard.registry.ValueFormat;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.FreePorts;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The three situations every user of a client-side balancer worries about, each under a steady
 * stream of calls: a server that is down when the client starts, one that dies while serving,
 * and one that restarts. Real etcd, real servers (a child JVM where a SIGKILL is needed), real
 * channels through {@code etcd://} and {@code weighted_random}. A call on the connection of a
 * server that dies ends as grpc-java ends it ({@link TransportLoss}): UNAVAILABLE, which the retry
 * policy retries, or now and then UNKNOWN "channel closed", which it does not.
 */
@Timeout(value = 360, unit = TimeUnit.SECONDS)
class ClientKeepsWorkingIT {

  private static final int CALLERS = 2;
  /**
   * How long the load may take to reach each count it is waited for. A few seconds on an idle
   * machine; at load average 58 on 2 cores, 300 calls to a child JVM just started took over 30 s.
   */
  private static final Duration AWAIT = Duration.ofSeconds(90);
  /**
   * Each call's deadline: long enough that a call a loaded machine is merely slow to answer does
   * not fail. A child JVM just restarted on its address answered its first calls after more than
   * 5 s at load average 58, and those calls failed DEADLINE_EXCEEDED though nothing was wrong.
   */
  private static final Duration CALL_DEADLINE = Duration.ofSeconds(30);

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private String service;
  private Greeters greeters;
  private ChildGreeter child;

  @BeforeEach
  void setUp(TestInfo test) {
    service = test.getTestMethod().orElseThrow().getName();
    greeters = new Greeters(etcd.endpoints(), service);
  }

  @AfterEach
  void tearDown() throws InterruptedException {
    if (child != null) {
      child.close();
    }
    greeters.close();
  }

  @Test
  void serverDownWhenClientStartsIsRoutedAroundAndJoinsWhenItComesUp() throws Exception {
    GreeterServer a = greeters.start(1);
    GreeterServer b = greeters.start(1);
    // Registered but not listening: what a client sees after a crash, until the lease expires.
    int downPort = FreePorts.one();
    String down = "127.0.0.1:" + downPort;
    try (Client kv = EtcdConnection.of(etcd.endpoints()).connect()) {
      long lease = kv.getLeaseClient().grant(60).get(5, TimeUnit.SECONDS).getID();
      kv.getKVClient()
          .put(
              bytes(KeyLayout.defaults().instanceKey(service, down)),
              ByteSequence.from(ValueCodec.encode(ServiceInstance.of(service, down, 1), ValueFormat.PIPE)),
              PutOption.builder().withLeaseId(lease).build())
          .get(5, TimeUnit.SECONDS);
    }

    try (GreeterClient client = client(true);
        Load load = Load.start(client, CALLERS)) {
      await().atMost(AWAIT).until(() -> load.succeeded() >= 2_000);
      assertThat(load.callsByBackend()).containsOnlyKeys(a.address(), b.address());

      // The server comes up on its registered address: the client starts calling it.
      greeters.add(greeters.builder().register(false).port(downPort).weight(1).build().start());
      await().atMost(AWAIT).until(() -> load.callsTo(down) >= 200);
      assertThat(load.failures()).as("failed calls").isEmpty();
    }
  }

  @Test
  void serverKilledWhileServingFailsNoCallItsRetryPolicyCanRetry() throws Exception {
    greeters.start(1);
    greeters.start(1);
    child = ChildGreeter.start(childArgs());

    try (GreeterClient client = client(true);
        Load load = Load.start(client, CALLERS)) {
      await().atMost(AWAIT).until(() -> load.callsTo(child.address()) >= 300);
      child.kill();
      long afterKill = load.succeeded();
      await().atMost(AWAIT).until(() -> load.succeeded() >= afterKill + 3_000);
      assertOnlyCallsTheRetryPolicyCannotRetryFailed(load);
    }
  }

  @Test
  void serverKilledWhileServingFailsOnlyCallsInFlightWithoutRetryPolicy() throws Exception {
    greeters.start(1);
    greeters.start(1);
    child = ChildGreeter.start(childArgs());

    try (GreeterClient client = client(false);
        Load load = Load.start(client, CALLERS)) {
      await().atMost(AWAIT).until(() -> load.callsTo(child.address()) >= 300);
      child.kill();
      long afterKill = load.succeeded();
      await().atMost(AWAIT).until(() -> load.succeeded() >= afterKill + 3_000);
      // Each caller has at most one call in flight, so at most that many could be on the
      // killed server when it died.
      assertThat(load.failedStatuses()).as("failed calls %s", load.failures())
          .hasSizeLessThanOrEqualTo(CALLERS)
          .allSatisfy(s -> assertThat(TransportLoss.endedByTransportLoss(s)).as("ended by the loss of its transport: %s", s)
              .isTrue());
    }
  }

  @Test
  void serverRestartedOnItsAddressIsCalledAgain() throws Exception {
    greeters.start(1);
    greeters.start(1);
    int port = FreePorts.one();
    child = ChildGreeter.start(childArgs("--port", Integer.toString(port)));
    String address = child.address();

    try (GreeterClient client = client(true);
        Load load = Load.start(client, CALLERS)) {
      await().atMost(AWAIT).until(() -> load.callsTo(address) >= 300);
      child.kill();
      long before = load.callsTo(address);
      child = ChildGreeter.start(childArgs("--port", Integer.toString(port)));
      assertThat(child.address()).isEqualTo(address);
      await().atMost(AWAIT).until(() -> load.callsTo(address) >= before + 300);
      assertOnlyCallsTheRetryPolicyCannotRetryFailed(load);
    }
  }

  /**
   * No call failed but those grpc-java ends UNKNOWN "channel closed" because a write met the dead
   * server's closed connection first ({@link TransportLoss#unknownChannelClosed}): the retry
   * policy lists UNAVAILABLE only, so it cannot retry them. Each caller has at most one call in
   * flight, so at most that many.
   */
  private static void assertOnlyCallsTheRetryPolicyCannotRetryFailed(Load load) {
    assertThat(load.failedStatuses()).as("failed calls %s", load.failures())
        .hasSizeLessThanOrEqualTo(CALLERS)
        .allSatisfy(s -> assertThat(TransportLoss.unknownChannelClosed(s))
            .as("UNKNOWN channel closed: %s", s).isTrue());
  }

  private String[] childArgs(String... extra) {
    String[] base = {
      "--endpoints", etcd.endpoints(), "--service", service, "--weight", "1", "--ttl", "5s"
    };
    String[] all = new String[base.length + extra.length];
    System.arraycopy(base, 0, all, 0, base.length);
    System.arraycopy(extra, 0, all, base.length, extra.length);
    return all;
  }

  private GreeterClient client(boolean retryPolicy) {
    return GreeterClient.builder(etcd.endpoints(), service)
        .policy("weighted_random")
        .retry(retryPolicy)
        .deadline(CALL_DEADLINE)
        .build();
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, UTF_8);
  }
}
