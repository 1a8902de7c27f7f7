package io.steelyard.agent;

import io.steelyard.testkit.time.FakeScheduler;
import static org.assertj.core.api.Assertions.assertThat;

import io.etcd.jetcd.Client;
import io.steelyard.registry.EtcdConnection;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Keepalive silence and loss on the injected clock. etcd is "at" a closed port, so no keepalive
 * is ever answered; only the fake clock decides when the lease counts as silent and as lost.
 */
@Timeout(30)
class LeaseKeeperTest {

  private final FakeScheduler fake = new FakeScheduler();
  private final List<String> heard = new CopyOnWriteArrayList<>();
  private Client nowhere;

  @BeforeEach
  void connectNowhere() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      nowhere = EtcdConnection.of("http://127.0.0.1:" + s.getLocalPort()).connect();
    }
  }

  @AfterEach
  void close() {
    nowhere.close();
  }

  private LeaseKeeper.KeptAlive keepAlive(long ttlSeconds) {
    LeaseKeeper keeper = new LeaseKeeper(ttlSeconds, Duration.ofSeconds(5), fake, fake.ticker, "test");
    LeaseKeeper.KeptAlive kept =
        keeper.keepAlive(nowhere, 0x1234, fake.ticker.read(), fake, new LeaseKeeper.Listener() {
          @Override
          public void onSilent(LeaseKeeper.KeptAlive k) {
            heard.add("silent at " + millis());
          }

          @Override
          public void onLost(
              LeaseKeeper.KeptAlive k, RecoveryCause why, String reason, @Nullable Throwable cause) {
            heard.add("lost at " + millis() + " (" + why.tag() + "): " + reason);
          }

          @Override
          public void onBroken(LeaseKeeper.KeptAlive k, Throwable error) {
            // jetcd's own retries of the refused connection; not what this test is about
          }
        });
    fake.runDue();
    return kept;
  }

  private long millis() {
    return TimeUnit.NANOSECONDS.toMillis(fake.ticker.read());
  }

  @Test
  void silenceIsReportedWellInsideTheTtl() {
    assertThat(TimeUnit.NANOSECONDS.toMillis(LeaseKeeper.silenceNanos(5))).isEqualTo(3_000);
    assertThat(TimeUnit.NANOSECONDS.toMillis(LeaseKeeper.silenceNanos(10))).isEqualTo(5_500);
    assertThat(TimeUnit.NANOSECONDS.toMillis(LeaseKeeper.silenceNanos(2))).isEqualTo(1_666);
    assertThat(TimeUnit.NANOSECONDS.toMillis(LeaseKeeper.silenceNanos(60))).isEqualTo(30_500);
  }

  @Test
  void anUnansweredKeepaliveIsSilentOnceThenLostAfterTheTtl() {
    // A long TTL: jetcd's own keepalive deadline runs on the real clock and would end the
    // keepalive after one TTL of real time, which a loaded machine can spend in this test.
    keepAlive(60);

    fake.forwardTime(Duration.ofMillis(30_499));
    assertThat(heard).isEmpty();
    fake.forwardTime(Duration.ofMillis(1));
    assertThat(heard).containsExactly("silent at 30500");

    fake.forwardTime(Duration.ofMillis(29_499));
    assertThat(heard).hasSize(1);
    fake.forwardTime(Duration.ofMillis(1));
    assertThat(heard).containsExactly(
        "silent at 30500",
        "lost at 60000 (keepalive_timeout): no keepalive answer for the whole TTL (60s)");

    fake.forwardTime(Duration.ofMinutes(1));
    assertThat(heard).hasSize(2); // nothing after the loss
    assertThat(fake.pending()).isZero();
  }

  @Test
  void aClosedKeepaliveReportsNothing() {
    LeaseKeeper.KeptAlive kept = keepAlive(5);

    kept.close();
    fake.forwardTime(Duration.ofMinutes(1));

    assertThat(heard).isEmpty();
    assertThat(fake.pending()).isZero();
  }
}
