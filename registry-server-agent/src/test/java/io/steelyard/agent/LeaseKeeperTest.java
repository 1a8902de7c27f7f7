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
 * is ever answered by it; the tests answer ({@link LeaseKeeper.KeptAlive#answered}) when etcd
 * directly or through a gRPC proxy would, and the fake clock decides when the lease counts as
 * silent and as lost.
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
    LeaseKeeper.KeptAlive kept = keeper.keepAlive(nowhere, 0x1234, fake.ticker.read(), fake, new Heard());
    fake.runDue();
    return kept;
  }

  /** Answers {@code times} times, {@code every} apart, after a first answer now. */
  private void answerEvery(LeaseKeeper.KeptAlive kept, Duration every, int times) {
    kept.answered(fake.ticker.read());
    answerEveryAgain(kept, every, times);
  }

  /** Answers {@code times} times, {@code every} apart. */
  private void answerEveryAgain(LeaseKeeper.KeptAlive kept, Duration every, int times) {
    for (int i = 0; i < times; i++) {
      fake.forwardTime(every);
      kept.answered(fake.ticker.read());
      fake.runDue();
    }
  }

  private long millis() {
    return millis(fake.ticker.read());
  }

  private static long millis(long nanos) {
    return TimeUnit.NANOSECONDS.toMillis(nanos);
  }

  private final class Heard implements LeaseKeeper.Listener {
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
  }

  @Test
  void silenceIsReportedWellInsideTheTtl() {
    assertThat(TimeUnit.NANOSECONDS.toMillis(LeaseKeeper.silenceNanos(5))).isEqualTo(3_000);
    assertThat(TimeUnit.NANOSECONDS.toMillis(LeaseKeeper.silenceNanos(10))).isEqualTo(5_500);
    assertThat(TimeUnit.NANOSECONDS.toMillis(LeaseKeeper.silenceNanos(2))).isEqualTo(1_666);
    assertThat(TimeUnit.NANOSECONDS.toMillis(LeaseKeeper.silenceNanos(60))).isEqualTo(30_500);
  }

  @Test
  void theThresholdFollowsTheLatenessUpToTheCap() {
    // Directly: answers within milliseconds of the ask keep the fixed threshold.
    assertThat(millis(LeaseKeeper.silenceNanos(10, 0))).isEqualTo(5_500);
    assertThat(millis(LeaseKeeper.silenceNanos(10, TimeUnit.MILLISECONDS.toNanos(200)))).isEqualTo(5_500);
    // A little late: the ask (3.33 s + 0.5 s) plus 1.5 times the lateness.
    assertThat(millis(LeaseKeeper.silenceNanos(10, TimeUnit.MILLISECONDS.toNanos(1_500)))).isEqualTo(6_083);
    // Through a proxy (about TTL/3 late), and while nothing is known: the cap.
    assertThat(millis(LeaseKeeper.silenceNanos(10, TimeUnit.MILLISECONDS.toNanos(3_500)))).isEqualTo(8_333);
    assertThat(millis(LeaseKeeper.silenceNanos(10, LeaseKeeper.UNKNOWN_LATENESS))).isEqualTo(8_333);
    assertThat(millis(LeaseKeeper.maxSilenceNanos(15))).isEqualTo(12_500);
    assertThat(millis(LeaseKeeper.maxSilenceNanos(5))).isEqualTo(3_500);
    assertThat(millis(LeaseKeeper.maxSilenceNanos(3))).isEqualTo(millis(LeaseKeeper.silenceNanos(3)));
  }

  @Test
  void latenessCountsFromWhenJetcdAsked() {
    assertThat(LeaseKeeper.latenessNanos(10, TimeUnit.MILLISECONDS.toNanos(3_400))).isZero();
    assertThat(millis(LeaseKeeper.latenessNanos(10, TimeUnit.MILLISECONDS.toNanos(7_000)))).isEqualTo(3_166);
    // An answer to a request jetcd repeated while waiting (a proxy answers them all at once).
    assertThat(LeaseKeeper.latenessNanos(10, TimeUnit.MILLISECONDS.toNanos(3))).isNegative();
  }

  @Test
  void answersOnTimeKeepTheFixedThreshold() {
    LeaseKeeper.KeptAlive kept = keepAlive(60);
    // Asked every 20 s, answered within 100 ms: known to be on time after 8 answers.
    answerEvery(kept, Duration.ofMillis(20_100), LeaseKeeper.LATENESS_SAMPLES - 1);
    assertThat(kept.latenessNanos()).isEqualTo(LeaseKeeper.UNKNOWN_LATENESS);
    answerEveryAgain(kept, Duration.ofMillis(20_100), 1);
    assertThat(kept.latenessNanos()).isZero();
    long last = millis();

    fake.forwardTime(Duration.ofMillis(30_499));
    assertThat(heard).isEmpty();
    fake.forwardTime(Duration.ofMillis(1));
    assertThat(heard).containsExactly("silent at " + (last + 30_500));
  }

  @Test
  void lateAnswersThroughAProxyRaiseTheThresholdAndAreNotSilence() {
    LeaseKeeper.KeptAlive kept = keepAlive(60);
    // etcd's 3.4 gRPC proxy answers at its own renewals, every TTL/3 + its tick; our ask comes
    // just after one and waits for the next: 2 TTL/3 + up to 1 s apart, and the asks jetcd
    // repeated meanwhile are answered at the same moment.
    for (int i = 0; i < 2 * LeaseKeeper.LATENESS_SAMPLES; i++) {
      fake.forwardTime(Duration.ofMillis(41_000));
      kept.answered(fake.ticker.read());
      fake.forwardTime(Duration.ofMillis(2));
      kept.answered(fake.ticker.read());
      fake.runDue();
    }

    assertThat(millis(kept.latenessNanos())).isEqualTo(20_500);
    assertThat(heard).isEmpty(); // 41 s apart, past the fixed 30.5 s
  }

  @Test
  void aSilenceAfterALateAnswerIsStillReportedBeforeTheTtl() {
    LeaseKeeper.KeptAlive kept = keepAlive(60);
    answerEvery(kept, Duration.ofMillis(41_000), LeaseKeeper.LATENESS_SAMPLES);
    // On time for a while, as through a proxy now and then: one late answer among the last 8.
    answerEveryAgain(kept, Duration.ofMillis(20_100), LeaseKeeper.LATENESS_SAMPLES - 1);
    assertThat(heard).isEmpty();
    assertThat(millis(kept.latenessNanos())).isEqualTo(20_500);
    long last = millis();

    fake.forwardTime(Duration.ofMillis(49_999));
    assertThat(heard).isEmpty();
    fake.forwardTime(Duration.ofMillis(1));
    assertThat(heard).containsExactly("silent at " + (last + 50_000)); // the cap: 10 s left
    fake.forwardTime(Duration.ofMillis(10_000));
    assertThat(heard).containsExactly(
        "silent at " + (last + 50_000),
        "lost at " + (last + 60_000) + " (keepalive_timeout): no keepalive answer for the whole TTL (60s)");
  }

  @Test
  void aReplacingStreamStartsFromWhatTheOldOneLearned() {
    LeaseKeeper keeper = new LeaseKeeper(60, Duration.ofSeconds(5), fake, fake.ticker, "test");
    LeaseKeeper.KeptAlive onTime =
        keeper.keepAlive(nowhere, 0x1234, fake.ticker.read(), 0, fake, new Heard());
    LeaseKeeper.KeptAlive late =
        keeper.keepAlive(
            nowhere, 0x1235, fake.ticker.read(), TimeUnit.SECONDS.toNanos(20), fake, new Heard());
    fake.runDue();

    fake.forwardTime(Duration.ofMillis(30_500));
    assertThat(heard).containsExactly("silent at 30500"); // the first: on time so far

    onTime.close();
    late.close();
  }

  @Test
  void anUnansweredKeepaliveIsSilentOnceThenLostAfterTheTtl() {
    // A long TTL: jetcd's own keepalive deadline runs on the real clock and would end the
    // keepalive after one TTL of real time, which a loaded machine can spend in this test.
    keepAlive(60);

    // Nothing is known of how late its answers come: the threshold is the cap.
    fake.forwardTime(Duration.ofMillis(49_999));
    assertThat(heard).isEmpty();
    fake.forwardTime(Duration.ofMillis(1));
    assertThat(heard).containsExactly("silent at 50000");

    fake.forwardTime(Duration.ofMillis(9_999));
    assertThat(heard).hasSize(1);
    fake.forwardTime(Duration.ofMillis(1));
    assertThat(heard).containsExactly(
        "silent at 50000",
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
