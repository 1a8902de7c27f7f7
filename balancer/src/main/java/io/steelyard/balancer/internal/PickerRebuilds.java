package io.steelyard.balancer.internal;

import static java.util.Objects.requireNonNull;

import com.google.common.base.Ticker;
import io.grpc.LoadBalancer.Helper;
import io.grpc.SynchronizationContext.ScheduledHandle;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;
import javax.annotation.concurrent.NotThreadSafe;

/**
 * When the balancer rebuilds its picker: at once for a change the published picker must not
 * miss, and at most once per {@link #WINDOW_NANOS} for a burst of changes it can do without for
 * a moment.
 *
 * <p><b>Why.</b> Every child's state change asks for a rebuild, and a rebuild is O(n): a channel
 * that connects to n endpoints sees about 2n changes (each child connecting, then READY) and
 * would pay O(n²), minutes of CPU at n = 10,000. Most of those changes leave the published
 * picker valid: an endpoint that goes READY is simply not picked yet, one that starts
 * connecting was not picked anyway. The balancer tells them apart ({@link #soon}) from the ones
 * that must show at once ({@link #now}): the first READY endpoint, one that stops being READY,
 * one that fails, every resolution, every slow-start step.
 *
 * <p><b>The window.</b> A change that can wait is built at once when no rebuild ran in the last
 * {@value #WINDOW_MILLIS} ms (a server that restarts alone joins the picker at once); inside the
 * window, one rebuild is scheduled for its end and covers every change until then, so the last
 * state is always published, at most {@value #WINDOW_MILLIS} ms late. A burst then costs one
 * rebuild per window: at n = 10,000, where one costs a few milliseconds, under a tenth of a core
 * while the burst lasts. 50 ms is short next to what an endpoint joining late costs (its share of
 * calls for those 50 ms goes to the others; slow start ramps a new one over seconds) and long
 * next to a rebuild. With fewer than {@value #MIN_CHILDREN} children every change rebuilds at
 * once: a rebuild costs microseconds there, and a burst of all of them stays under a
 * millisecond, so delaying an endpoint would buy nothing.
 *
 * <p>Threading: confined to the balancer's SynchronizationContext; the scheduled rebuild runs
 * there too.
 */
@NotThreadSafe
final class PickerRebuilds {

  static final long WINDOW_MILLIS = 50;

  /** The shortest time between two rebuilds for changes that can wait. */
  static final long WINDOW_NANOS = TimeUnit.MILLISECONDS.toNanos(WINDOW_MILLIS);

  /** Fewer children than this: every change rebuilds at once. */
  static final int MIN_CHILDREN = 100;

  private final Helper helper;
  private final Ticker ticker;
  private final Runnable rebuild;

  @Nullable private ScheduledHandle pending;
  private boolean rebuilt;
  private long lastRebuildNanos;
  private boolean shutdown;

  /**
   * @param helper whose SynchronizationContext and scheduler run a rebuild at a window's end
   * @param ticker the clock windows are measured on
   * @param rebuild builds and publishes the picker from the balancer's current state
   */
  PickerRebuilds(Helper helper, Ticker ticker, Runnable rebuild) {
    this.helper = requireNonNull(helper, "helper");
    this.ticker = requireNonNull(ticker, "ticker");
    this.rebuild = requireNonNull(rebuild, "rebuild");
  }

  /** Rebuilds now, for a change the published picker must not miss; covers any pending one. */
  void now() {
    cancelPending();
    rebuilt = true;
    lastRebuildNanos = ticker.read();
    rebuild.run();
  }

  /**
   * A change the published picker stays valid without, among {@code children} children: rebuilds
   * now when that is cheap or none ran within the window, else makes sure one runs at the
   * window's end.
   */
  void soon(int children) {
    if (shutdown) {
      return;
    }
    if (pending != null && pending.isPending()) {
      return; // the scheduled rebuild will see this change
    }
    long sinceLast = ticker.read() - lastRebuildNanos;
    if (children < MIN_CHILDREN || !rebuilt || sinceLast >= WINDOW_NANOS) {
      now();
      return;
    }
    pending =
        helper
            .getSynchronizationContext()
            .schedule(
                () -> {
                  pending = null;
                  if (!shutdown) {
                    now();
                  }
                },
                WINDOW_NANOS - sinceLast,
                TimeUnit.NANOSECONDS,
                helper.getScheduledExecutorService());
  }

  /** No rebuild after this one. */
  void shutdown() {
    shutdown = true;
    cancelPending();
  }

  private void cancelPending() {
    if (pending != null) {
      pending.cancel();
      pending = null;
    }
  }
}
