package io.steelyard.agent;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import io.steelyard.registry.RegistryException.Kind;
import io.steelyard.registry.internal.Backoff;
import io.steelyard.registry.internal.RetryPolicy;
import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.api.Test;

class RegistrationRetryTest {

  private static final long INITIAL = Duration.ofMillis(200).toNanos();
  private static final long MAX = Duration.ofSeconds(5).toNanos();

  /** No jitter: nextDouble is the midpoint. */
  private static final Random NO_JITTER = new Random() {
    private static final long serialVersionUID = 1L;

    @Override
    public double nextDouble() {
      return 0.5;
    }
  };

  private final RegistrationRetry retry =
      new RegistrationRetry(
          "greeter at 10.0.0.1:1", "/services/greeter/10.0.0.1:1",
          RegistrationDefaults.backoff(Duration.ofNanos(INITIAL), Duration.ofNanos(MAX), NO_JITTER));

  private static Throwable down() {
    return Status.UNAVAILABLE.withDescription("connection refused").asRuntimeException();
  }

  private static Throwable denied() {
    return Status.PERMISSION_DENIED.withDescription("etcdserver: permission denied").asRuntimeException();
  }

  @Test
  void attemptsBackOffAndRenewTheClientFromTheSecondFailure() {
    RetryPolicy.Decision first = retry.attemptFailed(down());
    RetryPolicy.Decision second = retry.attemptFailed(down());

    assertThat(first.delayNanos()).isEqualTo(INITIAL);
    assertThat(first.renewClient()).isFalse();
    assertThat(second.delayNanos()).isEqualTo(2 * INITIAL);
    assertThat(second.renewClient()).isTrue();
    assertThat(RegistrationDefaults.RENEW_CLIENT_AFTER_FAILURES).isEqualTo(2);
  }

  @Test
  void aRefusalWaitsTheLongestAndIsKeptUntilRegistered() {
    RetryPolicy.Decision d = retry.attemptFailed(denied());

    assertThat(d.refused()).isTrue();
    assertThat(d.delayNanos()).isEqualTo(MAX);
    assertThat(retry.refusal()).isNotNull();
    assertThat(retry.refusal().kind()).isEqualTo(Kind.PERMISSION_DENIED);
    retry.attemptFailed(down()); // etcd away meanwhile: the refusal is still the last word
    assertThat(retry.refusal()).isNotNull();
    retry.registered();
    assertThat(retry.refusal()).isNull();
  }

  @Test
  void startingOverCountsAttemptsFromTheFirstAgain() {
    retry.attemptFailed(down());
    retry.attemptFailed(down());
    retry.startOver();

    RetryPolicy.Decision d = retry.attemptFailed(down());
    assertThat(d.failures()).isEqualTo(1);
    assertThat(d.delayNanos()).isEqualTo(INITIAL);
  }

  @Test
  void checksOfTheKeyCountApartFromAttemptsAndStartAfreshWhenEtcdAnswers() {
    retry.attemptFailed(down());
    retry.attemptFailed(down());

    assertThat(retry.checkDelayNanos()).isEqualTo(INITIAL);
    assertThat(retry.checkDelayNanos()).isEqualTo(2 * INITIAL);
    retry.keyAnswered();
    assertThat(retry.checkDelayNanos()).isEqualTo(INITIAL);
  }
}
