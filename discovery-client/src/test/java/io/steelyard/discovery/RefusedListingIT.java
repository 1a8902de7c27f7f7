package io.steelyard.discovery;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.auth.Permission;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.RegistryException.Kind;
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
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  private final List<Throwable> unavailable = new CopyOnWriteArrayList<>();
  private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
  private final Logger watcherLog = (Logger) LoggerFactory.getLogger(PrefixWatcher.class);

  @BeforeAll
  static void usersAndABigService() throws Exception {
    try (Client admin = EtcdConnection.of(etcd.endpoints()).connect()) {
      // Five 1 MiB values: the listing is over gRPC's 4 MiB inbound limit (etcd takes 1.5 MiB
      // per request, so each put passes).
      byte[] mib = new byte[1024 * 1024];
      Arrays.fill(mib, (byte) 'x');
      for (int i = 0; i < 5; i++) {
        admin.getKVClient().put(bytes("/services/big/" + i), ByteSequence.from(mib)).get(10, TimeUnit.SECONDS);
      }
      var auth = admin.getAuthClient();
      auth.userAdd(bytes("root"), bytes("rootpw")).get(10, TimeUnit.SECONDS);
      auth.roleAdd(bytes("root")).get(10, TimeUnit.SECONDS);
      auth.userGrantRole(bytes("root"), bytes("root")).get(10, TimeUnit.SECONDS);
      // A reader of one service only, as a least-privilege client would run.
      auth.userAdd(bytes("reader"), bytes("s3cret")).get(10, TimeUnit.SECONDS);
      auth.roleAdd(bytes("greeter-reader")).get(10, TimeUnit.SECONDS);
      auth.roleGrantPermission(bytes("greeter-reader"), bytes("/services/greeter/"),
              bytes("/services/greeter0"), Permission.Type.READ)
          .get(10, TimeUnit.SECONDS);
      auth.userGrantRole(bytes("reader"), bytes("greeter-reader")).get(10, TimeUnit.SECONDS);
      auth.authEnable().get(10, TimeUnit.SECONDS);
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
  void aListingOverTheClientsMessageLimitIsNamedAsThatLimit() {
    try (ServiceWatcher w = open("root", "rootpw", "big")) {
      await().atMost(Duration.ofSeconds(10)).until(() -> !unavailable.isEmpty());
      assertThat(unavailable.get(0)).isInstanceOfSatisfying(RegistryException.class, e -> {
        assertThat(e.kind()).isEqualTo(Kind.LIMIT);
        assertThat(e.getMessage()).contains("over a size or quota limit").contains("RESOURCE_EXHAUSTED");
      });
      assertThat(warnings()).anySatisfy(m -> assertThat(m)
          .contains("refused the list of service big")
          .contains("inbound message limit"));
      assertThat(warnings()).noneMatch(m -> m.contains("Cannot reach etcd"));
      assertThat(w.current()).isNull();
    }
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
