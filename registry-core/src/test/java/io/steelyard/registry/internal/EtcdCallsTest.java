package io.steelyard.registry.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.Status;
import io.steelyard.registry.RegistryException;
import io.steelyard.registry.RegistryException.Kind;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The timeout and cancellation plumbing of {@link EtcdCalls}, with a jetcd future stood in by a
 * plain {@link CompletableFuture} and time moved by hand. Against a real etcd: {@code
 * EtcdCallsIT}.
 */
class EtcdCallsTest {

  /** A timer whose tasks run only when the test fires them. */
  private static final class ManualTimer implements EtcdCalls.Timer {
    final List<FutureTask<?>> tasks = new ArrayList<>();
    final List<Long> delaysNanos = new ArrayList<>();

    @Override
    public FutureTask<?> schedule(Runnable task, long delay, TimeUnit unit) {
      FutureTask<?> f = new FutureTask<>(task, null);
      tasks.add(f);
      delaysNanos.add(unit.toNanos(delay));
      return f;
    }

    void fireAll() {
      tasks.forEach(FutureTask::run);
    }
  }

  private final ManualTimer timer = new ManualTimer();
  private final EtcdCalls calls = new EtcdCalls(Duration.ofMillis(250), timer);

  @Test
  void anAnswerCompletesTheCallAndCancelsItsTimeout() throws Exception {
    CompletableFuture<String> jetcd = new CompletableFuture<>();

    CompletableFuture<String> call = calls.call("get k", () -> jetcd);
    jetcd.complete("v");

    assertThat(call.get()).isEqualTo("v");
    assertThat(timer.delaysNanos).containsExactly(TimeUnit.MILLISECONDS.toNanos(250));
    assertThat(timer.tasks.get(0).isCancelled()).isTrue();
  }

  @Test
  void noAnswerWithinTheTimeoutFailsTheCallAndCancelsTheJetcdFuture() {
    CompletableFuture<String> jetcd = new CompletableFuture<>();
    CompletableFuture<String> call = calls.call("list greeter", () -> jetcd);
    assertThat(call).isNotDone();

    timer.fireAll();

    assertThat(jetcd).isCancelled();
    assertThatThrownBy(call::get)
        .isInstanceOf(ExecutionException.class)
        .cause()
        .isInstanceOfSatisfying(
            RegistryException.class,
            e -> {
              assertThat(e.kind()).isEqualTo(Kind.UNAVAILABLE);
              assertThat(e.getMessage()).isEqualTo("etcd did not answer within 250ms (list greeter)");
            });
  }

  @Test
  void aFailureIsClassifiedAndNamesTheOperation() {
    CompletableFuture<String> jetcd = new CompletableFuture<>();
    CompletableFuture<String> call = calls.call("put k", () -> jetcd);

    jetcd.completeExceptionally(Status.PERMISSION_DENIED.asRuntimeException());

    assertThatThrownBy(call::get)
        .cause()
        .isInstanceOfSatisfying(
            RegistryException.class,
            e -> {
              assertThat(e.kind()).isEqualTo(Kind.PERMISSION_DENIED);
              assertThat(e.getMessage()).startsWith("etcd refused put k: permission denied");
            });
  }

  @Test
  void cancellingTheCallCancelsTheJetcdFuture() {
    CompletableFuture<String> jetcd = new CompletableFuture<>();
    CompletableFuture<String> call = calls.call("get k", () -> jetcd);

    call.cancel(true);

    assertThat(jetcd).isCancelled();
  }

  @Test
  void aCallThatThrowsAtOnceFailsTheFutureInsteadOfTheCaller() {
    CompletableFuture<String> call =
        calls.call("get k", () -> {
          throw Status.CANCELLED.withDescription("client closed").asRuntimeException();
        });

    assertThatThrownBy(call::get)
        .cause()
        .isInstanceOfSatisfying(
            RegistryException.class, e -> assertThat(e.kind()).isEqualTo(Kind.UNAVAILABLE));
  }

  @Test
  void awaitReturnsTheAnswer() {
    assertThat(calls.await("get k", () -> CompletableFuture.completedFuture("v"))).isEqualTo("v");
  }

  @Test
  void awaitThrowsTheClassifiedFailure() {
    assertThatThrownBy(
            () ->
                calls.await(
                    "revoke lease 7",
                    () -> CompletableFuture.failedFuture(Status.NOT_FOUND.asRuntimeException())))
        .isInstanceOfSatisfying(
            RegistryException.class,
            e -> {
              assertThat(e.kind()).isEqualTo(Kind.NOT_REGISTERED);
              assertThat(EtcdErrors.isLeaseNotFound(e)).isTrue();
            });
  }

  @Test
  void awaitGivesUpAfterTheTimeoutAndCancels() {
    CompletableFuture<String> never = new CompletableFuture<>();
    EtcdCalls quick = new EtcdCalls(Duration.ofMillis(20));

    assertThatThrownBy(() -> quick.await("get k", () -> never))
        .isInstanceOfSatisfying(
            RegistryException.class,
            e -> assertThat(e.getMessage()).isEqualTo("etcd did not answer within 20ms (get k)"));
    assertThat(never).isCancelled();
  }

  @Test
  void anInterruptedWaitKeepsTheInterruptAndSaysSo() {
    CompletableFuture<String> never = new CompletableFuture<>();
    Thread.currentThread().interrupt();
    try {
      assertThatThrownBy(() -> calls.await("get k", () -> never))
          .isInstanceOfSatisfying(
              RegistryException.class,
              e -> assertThat(e.getMessage()).isEqualTo("interrupted while waiting for etcd (get k)"));
      assertThat(Thread.currentThread().isInterrupted()).isTrue();
      assertThat(never).isCancelled();
    } finally {
      Thread.interrupted();
    }
  }

  @Test
  void theTimeoutMustBePositive() {
    assertThatThrownBy(() -> new EtcdCalls(Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("timeout: PT0S (expected: > 0)");
  }
}
