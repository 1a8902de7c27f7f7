package io.steelyard.discovery;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.RegistryException.Kind;
import io.steelyard.testkit.EtcdAuthAdmin;
import io.steelyard.testkit.EtcdCluster;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;

/**
 * etcd answering "no" to the watcher's listing, against a real etcd with auth enabled: the
 * refusal is named as one at once (never "cannot reach etcd"), and retried at the capped delay,
 * not as if etcd were away.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RefusedListingIT {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY)
      // Above the client's 4 MiB inbound limit, so that one value alone can pass it.
      .extraArgs("--max-request-bytes", Integer.toString(6 << 20))
      .rootPassword("rootpw")
      .build();

  private final List<Throwable> unavailable = new CopyOnWriteArrayList<>();
  private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
  // The watcher and its parts (Staleness logs the failures) log under the package.
  private final Logger watcherLog = (Logger) LoggerFactory.getLogger(PrefixWatcher.class.getPackageName());

  @BeforeAll
  static void usersAndABigService() throws Exception {
    etcd.authAdmin()
        // A reader of one service only, as a least-privilege client would run.
        .addRole("greeter-reader", EtcdAuthAdmin.Access.READ, "/services/greeter/")
        .addUser("reader", "s3cret", "greeter-reader");
    EtcdConnection root =
        EtcdConnection.builder().endpoints(etcd.endpoints()).user(EtcdCluster.ROOT_USER, "rootpw").build();
    try (Client admin = root.connect()) {
      // Five 1 MiB values: together over gRPC's 4 MiB inbound limit, which paging gets round.
      byte[] mib = new byte[1024 * 1024];
      Arrays.fill(mib, (byte) 'x');
      for (int i = 0; i < 5; i++) {
        admin.getKVClient().put(bytes("/services/big/" + i), ByteSequence.from(mib)).get(10, TimeUnit.SECONDS);
      }
      // One 4.5 MiB value: a page of that one key is still over the limit.
      byte[] huge = new byte[9 << 19];
      Arrays.fill(huge, (byte) 'x');
      admin.getKVClient().put(bytes("/services/huge/0"), ByteSequence.from(huge)).get(10, TimeUnit.SECONDS);
    }
  }

  @BeforeEach
  void captureWatcherLogs() {
    logs.start();
    watcherLog.addAppender(logs);
  }

  @AfterEach
  void stopCapturing() {
    watcherLog.detachAppender(logs);
  }

  private ServiceWatcher open(String user, String password, String service) {
    EtcdConnection connection =
        EtcdConnection.builder().endpoints(etcd.endpoints()).user(user, password).build();
    return ServiceWatcher.builder(connection, service).open(new ServiceWatcher.Listener() {
      @Override
      public void onSnapshot(Snapshot snapshot) {}

      @Override
      public void onUnavailable(Throwable cause) {
        unavailable.add(cause);
      }
    });
  }

  private List<String> warnings() {
    return logs.list.stream()
        .filter(e -> e.getLevel() == Level.WARN)
        .map(ILoggingEvent::getFormattedMessage)
        .toList();
  }

  @Test
  void aServiceTheUserMayNotReadIsRefusedAtOnceAndNotRetriedAsIfEtcdWereAway() {
    try (ServiceWatcher w = open("reader", "s3cret", "secret")) {
      await().atMost(Duration.ofSeconds(3)).until(() -> !unavailable.isEmpty());
      assertThat(unavailable.get(0)).isInstanceOfSatisfying(RegistryException.class, e -> {
        assertThat(e.kind()).isEqualTo(Kind.PERMISSION_DENIED);
        assertThat(e.getMessage()).contains("permission denied");
      });
      assertThat(warnings()).anySatisfy(m -> assertThat(m)
          .contains("refused the list of service secret")
          .contains("permission denied"));
      assertThat(warnings()).noneMatch(m -> m.contains("Cannot reach etcd"));
      // Backing off from 200 ms would have tried four times by now; the capped delay is >= 3.75 s.
      await().during(Duration.ofMillis(2_500)).atMost(Duration.ofSeconds(3))
          .until(() -> unavailable.size() == 1);
      assertThat(w.current()).isNull();
    }
  }

  @Test
  void aListingOverTheClientsMessageLimitIsPagedBelowIt() {
    try (ServiceWatcher w = open("root", "rootpw", "big")) {
      // Five malformed values (1 MiB is over the codec's 16 KiB): listed, counted, skipped.
      await().atMost(Duration.ofSeconds(20)).until(() -> w.current() != null);
      assertThat(w.current().malformed()).hasSize(5);
      assertThat(unavailable).isEmpty();
      assertThat(warnings()).noneMatch(m -> m.contains("refused"));
    }
  }

  @Test
  void aKeyOverTheClientsMessageLimitIsNamedAsThatLimit() {
    try (ServiceWatcher w = open("root", "rootpw", "huge")) {
      await().atMost(Duration.ofSeconds(10)).until(() -> !unavailable.isEmpty());
      assertThat(unavailable.get(0)).isInstanceOfSatisfying(RegistryException.class, e -> {
        assertThat(e.kind()).isEqualTo(Kind.LIMIT);
        assertThat(e.getMessage()).contains("over a size or quota limit").contains("RESOURCE_EXHAUSTED");
      });
      assertThat(warnings()).anySatisfy(m -> assertThat(m)
          .contains("refused the list of service huge")
          .contains("inbound message limit"));
      assertThat(warnings()).noneMatch(m -> m.contains("Cannot reach etcd"));
      assertThat(w.current()).isNull();
    }
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
