package io.steelyard.agent;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.annotation.concurrent.GuardedBy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A registration's state as others see it: the current {@link RegistrationState}, the listeners
 * told about every change, and the futures waiting for the next {@link
 * RegistrationState#REGISTERED} ({@code start()}'s and {@code reregister()}'s).
 *
 * <p>Threading: {@link #set} runs on the registration's serial executor, so listeners are told
 * in order; {@link #state()} may be read on any thread. {@link #close} may run off it once, when
 * a close did not finish in time.
 */
final class StatePublisher {

  private static final Logger logger = LoggerFactory.getLogger(StatePublisher.class);

  private final String who;
  private final CopyOnWriteArrayList<RegistrationListener> listeners = new CopyOnWriteArrayList<>();
  private final CompletableFuture<Void> firstRegistered = new CompletableFuture<>();

  @GuardedBy("this")
  private final List<CompletableFuture<Void>> waiters = new ArrayList<>();

  private volatile RegistrationState state = RegistrationState.NEW;

  StatePublisher(String who, List<RegistrationListener> listeners) {
    this.who = who;
    this.listeners.addAll(listeners);
  }

  RegistrationState state() {
    return state;
  }

  /** Completes at the first REGISTERED; fails if closed before. */
  CompletableFuture<Void> firstRegistered() {
    return firstRegistered.copy();
  }

  void addListener(RegistrationListener listener) {
    listeners.add(listener);
  }

  /** Tells {@code listener} the current state (on the serial executor, after adding it). */
  void tellCurrent(RegistrationListener listener) {
    notify(listener, state);
  }

  /** Completes {@code f} at the next REGISTERED. */
  synchronized void awaitRegistered(CompletableFuture<Void> f) {
    waiters.add(f);
  }

  /** Moves to {@code next}, completing waiters on REGISTERED and telling every listener. */
  void set(RegistrationState next) {
    RegistrationState prev = state;
    if (prev == next) {
      return;
    }
    state = next;
    logger.debug("Registration of {}: {} -> {}", who, prev, next);
    if (next == RegistrationState.REGISTERED) {
      firstRegistered.complete(null);
      takeWaiters().forEach(w -> w.complete(null));
    }
    for (RegistrationListener l : listeners) {
      notify(l, next);
    }
  }

  /** Tells every listener the lease was lost for {@code cause}, then moves to RECOVERING. */
  void recover(RecoveryCause cause) {
    for (RegistrationListener l : listeners) {
      try {
        l.onRecovery(cause);
      } catch (RuntimeException e) {
        logger.warn("Listener of {} threw on a recovery ({})", who, cause, e);
      }
    }
    set(RegistrationState.RECOVERING);
  }

  /**
   * Moves to REFUSED and fails the first registration's future (if still pending) and every
   * waiter with {@code refusal}: etcd said no, the caller should hear it now.
   */
  void refuse(Exception refusal) {
    set(RegistrationState.REFUSED);
    firstRegistered.completeExceptionally(refusal);
    takeWaiters().forEach(w -> w.completeExceptionally(refusal));
  }

  /** Moves to CLOSED and fails every future still waiting with {@code cancelled}. */
  void close(CancellationException cancelled) {
    set(RegistrationState.CLOSED);
    firstRegistered.completeExceptionally(cancelled);
    takeWaiters().forEach(w -> w.completeExceptionally(cancelled));
  }

  private synchronized List<CompletableFuture<Void>> takeWaiters() {
    List<CompletableFuture<Void>> out = new ArrayList<>(waiters);
    waiters.clear();
    return out;
  }

  private void notify(RegistrationListener l, RegistrationState s) {
    try {
      l.onStateChanged(s);
    } catch (RuntimeException e) {
      logger.warn("Listener of {} threw on {}", who, s, e);
    }
  }
}
