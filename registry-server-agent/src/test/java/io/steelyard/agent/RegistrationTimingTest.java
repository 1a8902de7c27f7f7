package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.time.FakeScheduler;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Retry timing and close, under fake time. etcd is "at" a closed port: jetcd waits for a
 * connection that never comes, so every call ends by its (fake) timeout, exactly when the test
 * moves time past it. Recovery against a real etcd under fake time: {@code RegistrationFakeTimeIT}.
 */
@Timeout(30)
class RegistrationTimingTest {

  private static final Duration OPERATION_TIMEOUT = Duration.ofSeconds(30);

  private static EtcdConnection nowhere;

  private final FakeScheduler fake = new FakeScheduler();
  private final List<RegistrationState> seen = new CopyOnWriteArrayList<>();
  private ServiceRegistration reg;

  @BeforeAll
  static void findAClosedPort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      nowhere = EtcdConnection.of("http://127.0.0.1:" + s.getLocalPort());
    }
  }

  @AfterEach
  void closeRegistration() {
    if (reg != null) {
      reg.closeAsync();
      fake.runDue();
    }
  }

  /** A Random whose nextDouble is 0.5: jitter factor exactly 1. */
  private static Random noJitter() {
    return new Random() {
      private static final long serialVersionUID = 1L;

      @Override
      public double nextDouble() {
        return 0.5;
      }
    };
  }

  private ServiceRegistration started() {
    reg =
        ServiceRegistration.builder(nowhere, "greeter", "10.0.0.7:50051")
            .operationTimeout(OPERATION_TIMEOUT)
            .retryBackoff(Duration.ofMillis(200), Duration.ofSeconds(5))
            .random(noJitter())
            .listener(seen::add)
            .scheduler(fake, fake.ticker)
            .build();
    reg.start();
    fake.runDue();
    return reg;
  }

  private static long millis(long n) {
    return TimeUnit.MILLISECONDS.toNanos(n);
  }

  @Test
  void failedAttemptsAreRetriedWithDoublingDelaysUpToTheCap() {
    started();
    assertThat(reg.state()).isEqualTo(RegistrationState.REGISTERING);
    assertThat(fake.delaysNanos()).containsExactly(OPERATION_TIMEOUT.toNanos()); // the grant

    for (int i = 0; i < 7; i++) {
      fake.forwardTime(OPERATION_TIMEOUT); // the grant times out
      long retry = fake.delaysNanos().get(fake.delaysNanos().size() - 1);
      fake.forwardTime(Duration.ofNanos(retry)); // the next attempt starts
    }

    List<Long> delays = fake.delaysNanos();
    // grant timeout, retry delay, grant timeout, retry delay, ...
    assertThat(delays).hasSize(15);
    assertThat(List.of(delays.get(1), delays.get(3), delays.get(5), delays.get(7), delays.get(9),
            delays.get(11), delays.get(13)))
        .containsExactly(
            millis(200), millis(400), millis(800), millis(1600), millis(3200), millis(5000),
            millis(5000));
    assertThat(reg.state()).isEqualTo(RegistrationState.REGISTERING);
  }

  @Test
  void noAttemptStartsBeforeItsDelayHasPassed() {
    started();
    fake.forwardTime(OPERATION_TIMEOUT);
    int asked = fake.delaysNanos().size(); // grant timeout + retry delay

    fake.forwardTime(Duration.ofMillis(199));

    assertThat(fake.delaysNanos()).hasSize(asked);
    fake.forwardTime(Duration.ofMillis(1));
    assertThat(fake.delaysNanos()).hasSize(asked + 1); // the second grant's timeout
  }

  @Test
  void closeWhileARetryIsPendingCancelsIt() {
    started();
    fake.forwardTime(OPERATION_TIMEOUT); // attempt 1 failed, retry in 200 ms
    assertThat(fake.pending()).isEqualTo(1);

    var closed = reg.closeAsync();
    fake.runDue();

    await().atMost(Duration.ofSeconds(10)).until(closed::isDone);
    assertThat(reg.state()).isEqualTo(RegistrationState.CLOSED);
    assertThat(fake.pending()).isZero();
    int asked = fake.delaysNanos().size();
    int ran = fake.ran();
    fake.forwardTime(Duration.ofHours(1));
    assertThat(fake.delaysNanos()).hasSize(asked);
    assertThat(fake.ran()).isEqualTo(ran);
    assertThat(seen).containsExactly(RegistrationState.REGISTERING, RegistrationState.CLOSED);
  }

  @Test
  void closeWhileACallIsInFlightCancelsItAndItsTimeout() {
    started(); // the grant waits for a connection
    assertThat(fake.pending()).isEqualTo(1); // its timeout

    var closed = reg.closeAsync();
    fake.runDue();

    await().atMost(Duration.ofSeconds(10)).until(closed::isDone);
    assertThat(fake.pending()).isZero();
    int ran = fake.ran();
    fake.forwardTime(Duration.ofHours(1));
    assertThat(fake.ran()).isEqualTo(ran);
    assertThat(reg.registered()).isCompletedExceptionally();
    assertThat(seen).containsExactly(RegistrationState.REGISTERING, RegistrationState.CLOSED);
  }

  @Test
  void aWeightSetBeforeRegistrationIsRememberedAtOnce() {
    started();

    var set = reg.setWeight(7);
    fake.runDue();

    assertThat(set).isCompleted();
    assertThat(reg.weight()).isEqualTo(7);
  }
}
