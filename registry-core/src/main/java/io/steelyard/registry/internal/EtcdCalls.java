package io.steelyard.registry.internal;

import static com.google.common.base.Preconditions.checkArgument;
import static java.util.Objects.requireNonNull;

import io.steelyard.registry.RegistryException;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import javax.annotation.Nullable;

/**
 * Runs jetcd calls with a timeout and turns every failure into a classified {@link
 * RegistryException} (see {@link EtcdErrors}): the one etcd-call layer of the agent, the CLI and
 * discovery.
 *
 * <pre>{@code
 * EtcdCalls calls = new EtcdCalls(Duration.ofSeconds(5));
 * calls.call("list greeter", () -> kv.get(prefix, GetOption.builder().isPrefix(true).build()))
 *     .whenCompleteAsync((response, failure) -> ..., serialExecutor);   // async, never blocks
 * GetResponse r = calls.await("list greeter", () -> kv.get(prefix, prefixOption)); // CLI only
 * }</pre>
 *
 * <p>{@link #call} never blocks: it returns a future that completes with jetcd's answer, or
 * fails with a {@link RegistryException} when jetcd fails or the timeout passes first (the jetcd
 * future is then cancelled, which cancels the gRPC call). Cancelling the returned future cancels
 * the call too. Its continuations run on a jetcd or timer thread: hop onto your own executor
 * ({@code whenCompleteAsync(..., executor)}) before touching state. {@link #await} blocks the
 * calling thread for at most the timeout, for callers that may block (the CLI); {@link #join}
 * waits for an operation made of several calls.
 *
 * <p>Timeouts run on the injected {@link Timer}, or by default on the JDK's shared delay thread
 * ({@link CompletableFuture#orTimeout}). Immutable and thread-safe.
 */
public final class EtcdCalls {

  /** Schedules a timeout; a {@code ScheduledExecutorService::schedule} fits. */
  @FunctionalInterface
  public interface Timer {
    Future<?> schedule(Runnable task, long delay, TimeUnit unit);
  }

  private final Duration timeout;
  @Nullable private final Timer timer;

  /** Calls bounded by {@code timeout}, timed on the JDK's shared delay thread. */
  public EtcdCalls(Duration timeout) {
    this(timeout, null);
  }

  /** Calls bounded by {@code timeout}, timed by {@code timer} (e.g. a fake clock in tests). */
  public EtcdCalls(Duration timeout, @Nullable Timer timer) {
    requireNonNull(timeout, "timeout");
    checkArgument(!timeout.isNegative() && !timeout.isZero(), "timeout: %s (expected: > 0)", timeout);
    this.timeout = timeout;
    this.timer = timer;
  }

  public Duration timeout() {
    return timeout;
  }

  /**
   * Starts the call and returns at once. The future completes with etcd's answer, or fails with
   * a {@link RegistryException} naming {@code what} (e.g. {@code "list greeter"}).
   */
  public <T> CompletableFuture<T> call(String what, Supplier<? extends CompletableFuture<T>> call) {
    requireNonNull(what, "what");
    CompletableFuture<T> source;
    try {
      source = requireNonNull(call.get(), "call returned null");
    } catch (RuntimeException e) {
      // jetcd throws synchronously for a closed client, for instance.
      return CompletableFuture.failedFuture(EtcdErrors.toRegistryException(what, e));
    }
    CompletableFuture<T> timed = new CompletableFuture<>();
    source.whenComplete(
        (v, t) -> {
          if (t == null) {
            timed.complete(v);
          } else {
            timed.completeExceptionally(t);
          }
        });
    timeoutAfter(timed);
    CompletableFuture<T> result = new CompletableFuture<>();
    timed.whenComplete(
        (v, t) -> {
          if (t == null) {
            result.complete(v);
          } else if (EtcdErrors.unwrap(t) instanceof TimeoutException te && !source.isDone()) {
            source.cancel(true);
            result.completeExceptionally(EtcdErrors.timedOut(what, timeout, te));
          } else {
            result.completeExceptionally(EtcdErrors.toRegistryException(what, t));
          }
        });
    result.whenComplete(
        (v, t) -> {
          if (result.isCancelled()) {
            source.cancel(true);
          }
        });
    return result;
  }

  /**
   * Runs the call and waits for its answer on the calling thread, at most the timeout.
   *
   * @throws RegistryException naming {@code what} when etcd failed, refused or did not answer
   */
  public <T> T await(String what, Supplier<? extends CompletableFuture<T>> call) {
    return join(what, call(what, call));
  }

  /**
   * Waits on the calling thread for an operation composed of {@link #call}s (each bounded by its
   * timeout), for callers that may block. A {@link RegistryException}, or any other unchecked
   * failure of the operation, is thrown as it is.
   *
   * @throws RegistryException naming {@code what} when interrupted or cancelled
   */
  public static <T> T join(String what, CompletableFuture<T> operation) {
    requireNonNull(what, "what");
    try {
      return operation.get();
    } catch (ExecutionException e) {
      Throwable c = e.getCause();
      if (c instanceof RuntimeException re) {
        throw re;
      }
      if (c instanceof Error err) {
        throw err;
      }
      throw EtcdErrors.toRegistryException(what, c);
    } catch (CancellationException e) {
      throw EtcdErrors.toRegistryException(what, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      operation.cancel(true);
      throw new RegistryException(
          RegistryException.Kind.UNAVAILABLE,
          "interrupted while waiting for etcd (" + what + ")",
          e);
    }
  }

  private void timeoutAfter(CompletableFuture<?> f) {
    if (timer == null) {
      f.orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS);
      return;
    }
    Future<?> pending =
        timer.schedule(
            () -> f.completeExceptionally(new TimeoutException()),
            timeout.toNanos(),
            TimeUnit.NANOSECONDS);
    f.whenComplete((v, t) -> pending.cancel(false));
  }
}
