package io.steelyard.balancer.internal;

import static java.util.Objects.requireNonNull;

import com.google.common.annotations.VisibleForTesting;
import com.google.common.base.Ticker;
import io.grpc.Attributes;
import io.grpc.ClientStreamTracer;
import io.grpc.LoadBalancer.PickResult;
import io.grpc.Metadata;
import io.grpc.Status;
import io.steelyard.balancer.spi.TracerDecorator;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;
import javax.annotation.Nullable;
import javax.annotation.concurrent.ThreadSafe;

/**
 * The live load of one endpoint as seen by one {@code weighted_least_request} balancer: calls
 * outstanding, a peak-EWMA of latency, a decaying success ratio and, when a server reports one
 * (ORCA, {@code balancer-orca}), its utilization. {@link LeastRequestPicker} reads it on every
 * pick; the {@link #tracerFactory()} installed on every call through this endpoint writes it.
 *
 * <p><b>What a pick reads</b>: {@link #outstanding()}, a volatile {@code int} (threads share it only
 * when they call the same endpoint), {@link #penalty()}, {@link #errorCost()} and, with the
 * latency term, {@link #latencyNanos()}, volatile doubles. {@code penalty =
 * utilizationFactor = 1 / (1 - min(u, 0.95))} for a reported utilization {@code u} (1 without
 * reports): the M/M/1 stretch of response time at utilization {@code u}, capped at 20. {@code
 * errorCost = errorPenalty × (1 - s)}, {@code s} being the success ratio: added to the score,
 * whose unit is the endpoint's capacity, so a server failing half its calls (with the default
 * {@code errorPenalty}) counts as if its queue held about one capacity more than it does,
 * whatever its size.
 *
 * <p><b>Layout.</b> Those four fields are all this object holds besides one reference: 48 bytes,
 * one cache line or two adjacent ones, with no second object for the counter. Everything a pick
 * does not read (the averages behind the penalty and error cost, the clock, the tracer factory,
 * what the last picker build cached) lives in a separate {@link State}, so that at n = 10,000
 * endpoints the loads picks touch take 480 KB rather than twice that, and a pick's three reads
 * of a candidate's load hit one line.
 *
 * <p><b>Averages</b>, both with time constant {@code decay} (default 1 s), so that they weigh the
 * last {@code decay} of traffic whatever the call rate: each sample moves the average by {@code
 * 1 - exp(-dt / decay)}, {@code dt} being the time since the previous sample.
 *
 * <ul>
 *   <li>Latency is a <em>peak</em> EWMA (Finagle's): a sample above the average replaces it at
 *       once, a sample below pulls it down gradually, so a server that slows down is seen
 *       slow at its first slow reply and must prove itself fast for a while. Samples come from
 *       successful calls and from calls that ran out of deadline (their elapsed time is a true
 *       lower bound of the latency); fast failures are not latency.
 *   <li>The success ratio {@code s} starts at 1 and counts each call that ended OK as 1 and each
 *       call that ended with a server-side failure ({@code UNAVAILABLE}, {@code INTERNAL}, {@code
 *       UNKNOWN}, {@code DATA_LOSS}, {@code RESOURCE_EXHAUSTED}, {@code DEADLINE_EXCEEDED}) as 0.
 *       Other codes ({@code CANCELLED}, {@code NOT_FOUND}, ...) are the caller's business and are
 *       not counted.
 * </ul>
 *
 * <p>Threading: thread-safe. Picks read volatile fields and never lock; a call's completion and a
 * load report update the averages under the {@link State}'s monitor (contended only by calls to
 * the same endpoint completing at the same instant). Time comes from the injected {@link Ticker}.
 */
@ThreadSafe
final class EndpointLoad {

  /** Ceiling of a reported utilization in the factor: caps it at 20. */
  static final double MAX_UTILIZATION = 0.95;

  private static final VarHandle OUTSTANDING;

  static {
    try {
      OUTSTANDING =
          MethodHandles.lookup().findVarHandle(EndpointLoad.class, "outstanding", int.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  // What a pick reads (see Layout above); written by calls and reports under state's monitor,
  // except outstanding, which is counted atomically.
  private volatile int outstanding;
  private volatile double penalty = 1.0;
  private volatile double errorCost;
  private volatile double latencyNanos;

  private final State state;

  /**
   * A fresh load: nothing outstanding, no latency sample, success ratio 1. {@code decorator} may
   * wrap the tracer factory (per-call ORCA reports) and reports back through {@link
   * #reportUtilization}.
   */
  EndpointLoad(Ticker ticker, WeightedPolicyConfig config, TracerDecorator decorator) {
    // The tracers read state when calls run, never before this constructor has returned.
    this.state =
        new State(
            requireNonNull(ticker, "ticker"),
            requireNonNull(decorator, "decorator")
                .decorate(new LoadTracerFactory(), this::reportUtilization));
    configure(config);
  }

  /**
   * Applies {@code config}'s averaging settings; the state so far is kept. Called in the
   * SynchronizationContext on every picker build: a config with the same settings (nearly always
   * the same object) is skipped without taking a lock.
   */
  void configure(WeightedPolicyConfig config) {
    if (config == state.appliedConfig) {
      return;
    }
    state.appliedConfig = config;
    synchronized (state) {
      if (state.decayNanos == config.decayNanos()
          && state.errorPenalty == config.errorPenalty()) {
        return;
      }
      state.decayNanos = config.decayNanos();
      state.errorPenalty = config.errorPenalty();
      updatePenalty();
    }
  }

  /**
   * {@code childResult} (the endpoint's READY pick_first result) carrying this endpoint's tracer
   * factory; the same object as last time when {@code childResult} is the last one or equal to
   * it, so that a picker build does not copy a result per endpoint. ({@code PickResult.equals}
   * leaves the authority override out, hence the second comparison.) Called in the
   * SynchronizationContext.
   */
  PickResult traced(PickResult childResult) {
    PickResult last = state.childResult;
    if (childResult != last
        && (!childResult.equals(last)
            || !Objects.equals(childResult.getAuthorityOverride(), last.getAuthorityOverride()))) {
      state.childResult = childResult;
      state.tracedResult = childResult.copyWithStreamTracerFactory(state.tracerFactory);
    }
    return state.tracedResult;
  }

  /**
   * Marks this load as covered by picker build {@code build}; returns false when it was marked
   * for that build already (an endpoint in several groups). Called in the SynchronizationContext.
   */
  boolean mark(int build) {
    if (state.build == build) {
      return false;
    }
    state.build = build;
    return true;
  }

  /** Whether {@link #mark} was called for {@code build}. */
  boolean marked(int build) {
    return state.build == build;
  }

  /** The tracer factory every call to this endpoint carries (decorated, e.g. for ORCA). */
  ClientStreamTracer.Factory tracerFactory() {
    return state.tracerFactory;
  }

  /** Calls started on this endpoint and not yet closed. */
  int outstanding() {
    return outstanding;
  }

  /** Peak-EWMA latency in nanoseconds; 0 until the first sample. */
  double latencyNanos() {
    return latencyNanos;
  }

  /** The score's multiplier for reported utilization; 1 for an idle server or without reports. */
  double penalty() {
    return penalty;
  }

  /**
   * What the score adds for recent failures, in capacities: {@code errorPenalty × (1 - s)}; 0 for
   * a server whose recent calls all succeeded, at most {@code errorPenalty}.
   */
  double errorCost() {
    return errorCost;
  }

  @VisibleForTesting
  double successRatio() {
    synchronized (state) {
      return state.successRatio;
    }
  }

  /**
   * A utilization the server reported (ORCA: application utilization, else CPU utilization).
   * Values that are not finite or are negative are ignored; above 1 counts as saturated.
   */
  void reportUtilization(double utilization) {
    if (!(utilization >= 0) || Double.isInfinite(utilization)) {
      return;
    }
    synchronized (state) {
      state.utilization = utilization;
      updatePenalty();
    }
  }

  @VisibleForTesting
  void callStarted() {
    OUTSTANDING.getAndAdd(this, 1);
  }

  /** A call started at {@code startNanos} (ticker time) ended with {@code code}. */
  @VisibleForTesting
  void callEnded(long startNanos, Status.Code code) {
    OUTSTANDING.getAndAdd(this, -1);
    boolean failure = isServerFailure(code);
    boolean latencySample = code == Status.Code.OK || code == Status.Code.DEADLINE_EXCEEDED;
    if (!failure && code != Status.Code.OK) {
      return;
    }
    long now = state.ticker.read();
    synchronized (state) {
      if (latencySample) {
        double sample = Math.max(0, now - startNanos);
        double previous = latencyNanos;
        if (sample >= previous) {
          latencyNanos = sample;
        } else {
          latencyNanos =
              previous + decayWeight(now - state.lastLatencySampleNanos) * (sample - previous);
        }
        state.lastLatencySampleNanos = now;
      }
      double outcome = failure ? 0.0 : 1.0;
      state.successRatio +=
          decayWeight(now - state.lastSuccessSampleNanos) * (outcome - state.successRatio);
      state.lastSuccessSampleNanos = now;
      updatePenalty();
    }
  }

  /** Weight of a new sample {@code elapsedNanos} after the previous one: 1 - exp(-dt / decay). */
  private double decayWeight(long elapsedNanos) {
    return -Math.expm1(-Math.max(0, elapsedNanos) / (double) state.decayNanos);
  }

  /** Under state's monitor. */
  private void updatePenalty() {
    errorCost = state.errorPenalty * (1.0 - state.successRatio);
    penalty = 1.0 / (1.0 - Math.min(state.utilization, MAX_UTILIZATION));
  }

  /** Server-side failures that say something about the endpoint, not about the caller. */
  static boolean isServerFailure(Status.Code code) {
    switch (code) {
      case UNAVAILABLE:
      case INTERNAL:
      case UNKNOWN:
      case DATA_LOSS:
      case RESOURCE_EXHAUSTED:
      case DEADLINE_EXCEEDED:
        return true;
      default:
        return false;
    }
  }

  @Override
  public String toString() {
    return "EndpointLoad{outstanding="
        + outstanding
        + ", latencyMillis="
        + String.format("%.2f", latencyNanos / 1e6)
        + ", penalty="
        + String.format("%.3f", penalty)
        + ", errorCost="
        + String.format("%.3f", errorCost)
        + "}";
  }

  /** What a pick does not read: the averages, the clock, the tracer, the last build's cache. */
  private static final class State {
    final Ticker ticker;
    final ClientStreamTracer.Factory tracerFactory;

    // Confined to the balancer's SynchronizationContext (picker builds).
    int build;
    @Nullable WeightedPolicyConfig appliedConfig;
    @Nullable PickResult childResult;
    @Nullable PickResult tracedResult;

    // Guarded by this.
    long decayNanos;
    double errorPenalty;
    double successRatio = 1.0;
    double utilization;
    long lastSuccessSampleNanos;
    long lastLatencySampleNanos;

    State(Ticker ticker, ClientStreamTracer.Factory tracerFactory) {
      this.ticker = ticker;
      this.tracerFactory = tracerFactory;
      long now = ticker.read();
      this.lastSuccessSampleNanos = now;
      this.lastLatencySampleNanos = now;
    }
  }

  /** One tracer per call (grpc's stream-tracer mechanism allocates it; nothing else does). */
  private final class LoadTracerFactory extends ClientStreamTracer.Factory {
    @Override
    public ClientStreamTracer newClientStreamTracer(
        ClientStreamTracer.StreamInfo info, Metadata headers) {
      return new LoadTracer();
    }
  }

  private final class LoadTracer extends ClientStreamTracer {
    private long startNanos;
    private volatile boolean started;

    @Override
    public void streamCreated(Attributes transportAttrs, Metadata headers) {
      // grpc calls streamCreated at most once, before streamClosed, from the caller's thread;
      // streamClosed may come without it (no stream was created), and then nothing was counted.
      startNanos = state.ticker.read();
      started = true;
      callStarted();
    }

    @Override
    public void streamClosed(Status status) {
      if (started) {
        started = false;
        callEnded(startNanos, status.getCode());
      }
    }
  }
}
