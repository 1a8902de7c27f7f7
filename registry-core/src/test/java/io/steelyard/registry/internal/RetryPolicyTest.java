package io.steelyard.registry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdExceptionFactory;
import io.grpc.Status;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.RegistryException.Kind;
import io.steelyard.registry.internal.RetryPolicy.Decision;
import io.steelyard.registry.internal.RetryPolicy.Failure;
import java.net.ConnectException;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeoutException;
import javax.net.ssl.SSLHandshakeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class RetryPolicyTest {

  private static final long INITIAL = Duration.ofMillis(200).toNanos();
  private static final long MAX = Duration.ofSeconds(5).toNanos();

  /** A Random whose nextDouble is always {@code value}: 0.5 is no jitter, 0 the lowest factor. */
  private static Random fixed(double value) {
    return new Random() {
      private static final long serialVersionUID = 1L;

      @Override
      public double nextDouble() {
        return value;
      }
    };
  }

  private static RetryPolicy policy(double randomValue) {
    return new RetryPolicy(
        new Backoff(Duration.ofNanos(INITIAL), Duration.ofNanos(MAX), 0.2, fixed(randomValue)), 2);
  }

  private static Throwable status(Status.Code code) {
    return Status.fromCode(code).withDescription("etcd's words").asRuntimeException();
  }

  @ParameterizedTest(name = "{0} -> {1}")
  @CsvSource({
    "UNAVAILABLE, UNAVAILABLE",
    "CANCELLED, UNAVAILABLE",
    "UNKNOWN, UNAVAILABLE",
    "INTERNAL, UNAVAILABLE",
    "DEADLINE_EXCEEDED, TIMEOUT",
    "PERMISSION_DENIED, REFUSED",
    "UNAUTHENTICATED, REFUSED",
    "RESOURCE_EXHAUSTED, REFUSED",
    "INVALID_ARGUMENT, REFUSED",
    "FAILED_PRECONDITION, REFUSED",
    "UNIMPLEMENTED, REFUSED",
    "OUT_OF_RANGE, COMPACTED",
    "NOT_FOUND, LEASE_GONE",
  })
  void everyGrpcCodeHasAFailure(Status.Code code, Failure expected) {
    assertThat(RetryPolicy.classify(status(code))).isEqualTo(expected);
    // jetcd's own exception carries the same code under its own enum.
    assertThat(
            RetryPolicy.classify(
                EtcdExceptionFactory.newEtcdException(ErrorCode.valueOf(code.name()), "x")))
        .isEqualTo(expected);
  }

  @Test
  void theSameWordsUnderAnotherCodeAreNotARefusal() {
    Throwable words = Status.UNAVAILABLE.withDescription("permission denied").asRuntimeException();

    assertThat(RetryPolicy.classify(words)).isEqualTo(Failure.UNAVAILABLE);
  }

  @Test
  void ourOwnDeadlineIsATimeoutThroughTheWrappers() {
    RegistryException timedOut =
        EtcdErrors.timedOut("list greeter", Duration.ofSeconds(5), new TimeoutException());

    assertThat(RetryPolicy.classify(new CompletionException(new TimeoutException())))
        .isEqualTo(Failure.TIMEOUT);
    assertThat(RetryPolicy.classify(timedOut)).isEqualTo(Failure.TIMEOUT);
    assertThat(RetryPolicy.classify(new ConnectException("refused")))
        .isEqualTo(Failure.UNAVAILABLE);
  }

  @Test
  void aTlsFailureAndTheGuardsHaveTheirFailure() {
    assertThat(RetryPolicy.classify(new SSLHandshakeException("bad certificate")))
        .isEqualTo(Failure.REFUSED);
    assertThat(RetryPolicy.classify(new RegistryException(Kind.CONFLICT, "changed", null)))
        .isEqualTo(Failure.CONFLICT);
    assertThat(RetryPolicy.classify(new RegistryException(Kind.MALFORMED, "unreadable", null)))
        .isEqualTo(Failure.CONFLICT);
  }

  @Test
  void anOutageBacksOffExponentiallyUpToTheCap() {
    RetryPolicy p = policy(0.5);
    Throwable down = status(Status.Code.UNAVAILABLE);

    assertThat(p.failed("list a", down).delayNanos()).isEqualTo(INITIAL);
    assertThat(p.failed("list a", down).delayNanos()).isEqualTo(2 * INITIAL);
    assertThat(p.failed("list a", down).delayNanos()).isEqualTo(4 * INITIAL);
    for (int i = 0; i < 100; i++) {
      p.failed("list a", down);
    }
    assertThat(p.failed("list a", down).delayNanos()).isEqualTo(MAX);
    assertThat(p.failures()).isEqualTo(104);
  }

  @Test
  void theJitterStaysWithinItsBoundsAndNeverPassesTheCap() {
    Throwable down = status(Status.Code.UNAVAILABLE);

    assertThat(policy(0.0).failed("w", down).delayNanos()).isEqualTo((long) (INITIAL * 0.8));
    assertThat(policy(0.999_999).failed("w", down).delayNanos())
        .isBetween((long) (INITIAL * 1.199), (long) (INITIAL * 1.2));
    RetryPolicy high = policy(0.999_999);
    for (int i = 0; i < 20; i++) {
      assertThat(high.failed("w", down).delayNanos()).isBetween(1L, MAX);
    }
  }

  @Test
  void aRefusalWaitsTheLongestDelayFromTheFirstFailure() {
    Decision d = policy(0.5).failed("register a", status(Status.Code.PERMISSION_DENIED));

    assertThat(d.refused()).isTrue();
    assertThat(d.delayNanos()).isEqualTo(MAX);
    assertThat(d.error().kind()).isEqualTo(Kind.PERMISSION_DENIED);
    assertThat(d.error().getMessage()).contains("register a").contains("permission denied");
    assertThat(policy(0.0).failed("register a", status(Status.Code.PERMISSION_DENIED)).delayNanos())
        .isEqualTo((long) (MAX * 0.8));
  }

  @Test
  void theClientIsRenewedFromTheSecondOutageInARow() {
    RetryPolicy p = policy(0.5);
    Throwable down = status(Status.Code.UNAVAILABLE);

    assertThat(p.failed("list a", down).renewClient()).isFalse();
    assertThat(p.failed("list a", down).renewClient()).isTrue();
    assertThat(p.failed("list a", down).renewClient()).isTrue();
    p.reset();
    assertThat(p.failed("list a", down).renewClient()).isFalse();
    assertThat(p.failures()).isEqualTo(1);
  }

  @Test
  void aRefusalKeepsTheClientUnlessItIsTls() {
    RetryPolicy denied = policy(0.5);
    RetryPolicy tls = policy(0.5);

    for (int i = 0; i < 3; i++) {
      assertThat(denied.failed("w", status(Status.Code.PERMISSION_DENIED)).renewClient()).isFalse();
    }
    assertThat(tls.failed("w", new SSLHandshakeException("expired")).renewClient()).isFalse();
    Decision second = tls.failed("w", new SSLHandshakeException("expired"));
    assertThat(second.renewClient()).isTrue();
    assertThat(second.error().kind()).isEqualTo(Kind.TLS);
  }

  @Test
  void aRetryJudgedElsewhereCountsAndBacksOffWithoutAFailure() {
    RetryPolicy p = policy(0.5);

    assertThat(p.nextDelayNanos()).isEqualTo(INITIAL);
    assertThat(p.nextDelayNanos()).isEqualTo(2 * INITIAL);
    assertThat(p.failures()).isEqualTo(2);
  }

  @Test
  void renewingBeforeTheFirstFailureIsRejected() {
    Backoff b = new Backoff(Duration.ofMillis(1), Duration.ofMillis(2), 0, new Random(1));

    assertThatThrownBy(() -> new RetryPolicy(b, 0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("renewAfterFailures: 0 (expected: >= 1)");
  }
}
