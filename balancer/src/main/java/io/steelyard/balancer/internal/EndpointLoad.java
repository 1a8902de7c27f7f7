package io.steelyard.balancer.internal;

import static java.util.Objects.requireNonNull;

import com.google.common.annotations.VisibleForTesting;
import com.google.common.base.Ticker;
import io.grpc.Attributes;
import io.grpc.ClientStreamTracer;
import io.grpc.Metadata;
import io.grpc.Status;
import io.steelyard.balancer.spi.TracerDecorator;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.util.concurrent.atomic.AtomicInteger;
import javax.annotation.concurrent.ThreadSafe;

/**
 * The live load of one endpoint as seen by one {@code weighted_least_request} balancer: calls
 * outstanding, a peak-EWMA of latency, a decaying success ratio and, when a server reports one
 * (ORCA, {@code balancer-orca}), its utilization. {@link LeastRequestPicker} reads it on every
 * pick; the {@link #tracerFactory()} installed on every call through this endpoint writes it.
 *
 * <p><b>What a pick reads</b>: {@link #outstanding()} (one {@link AtomicInteger} per endpoint:
 * threads share it only when they call the same endpoint), {@link #latencyNanos()}, {@link
 * #penalty()} and {@link #errorCost()}, three volatile doubles. {@code penalty =
 * utilizationFactor = 1 / (1 - min(u, 0.95))} for a reported utilization {@code u} (1 without
 * reports): the M/M/1 stretch of response time at utilization {@code u}, capped at 20. {@code
 * errorCost = errorPenalty × (1 - s)}, {@code s} being the success ratio: added to the score,
 * whose unit is the endpoint's capacity, so a server failing half its calls (with the default
 * {@code errorPenalty}) counts as if its queue held about one capacity more than it does,
 * whatever its size.
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
 * load report update the averages under this object's monitor (contended only by calls to the
 * same endpoint completing at the same instant). Time comes from the injected {@link Ticker}.
 */
@ThreadSafe
final class EndpointLoad {

  /** Ceiling of a reported utilization in the factor: caps it at 20. */
  static final double MAX_UTILIZATION = 0.95;

  private final Ticker ticker;
  private final AtomicInteger outstanding = new AtomicInteger();
  private final ClientStreamTracer.Factory ownTracerFactory = new LoadTracerFactory();
  private final ClientStreamTracer.Factory tracerFactory;

  private volatile double latencyNanos;
  private volatile double penalty = 1.0;
  private volatile double errorCost;

  // Guarded by this.
  private long decayNanos;
  private double errorPenalty;
  private double successRatio = 1.0;
  private double utilization;
  private long lastSuccessSampleNanos;
  private long lastLatencySampleNanos;

  /**
   * A fresh load: nothing outstanding, no latency sample, success ratio 1. {@code decorator} may
   * wrap the tracer factory (per-call ORCA reports) and reports back through {@link
   * #reportUtilization}.
   */
  EndpointLoad(Ticker ticker, WeightedPolicyConfig config, TracerDecorator decorator) {
    this.ticker = requireNonNull(ticker, "ticker");
    long now = ticker.read();
    this.lastSuccessSampleNanos = now;
    this.lastLatencySampleNanos = now;
    configure(config);
    this.tracerFactory =
        requireNonNull(decorator, "decorator").decorate(ownTracerFactory, this::reportUtilization);
  }

  /** Applies a new config's averaging settings; the state so far is kept. */
  synchronized void configure(WeightedPolicyConfig config) {
    this.decayNanos = config.decayNanos();
    this.errorPenalty = config.errorPenalty();
    updatePenalty();
  }

  /** The tracer factory every call to this endpoint carries (decorated, e.g. for ORCA). */
  ClientStreamTracer.Factory tracerFactory() {
    return tracerFactory;
  }

  /** Calls started on this endpoint and not yet closed. */
  int outstanding() {
    return outstanding.get();
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
  synchronized double successRatio() {
    return successRatio;
  }

  /**
   * A utilization the server reported (ORCA: application utilization, else CPU utilization).
   * Values that are not finite or are negative are ignored; above 1 counts as saturated.
   */
  void reportUtilization(double utilization) {
    if (!(utilization >= 0) || Double.isInfinite(utilization)) {
      return;
    }
    synchronized (this) {
      this.utilization = utilization;
      updatePenalty();
    }
  }

  @VisibleForTesting
  void callStarted() {
    outstanding.incrementAndGet();
  }

  /** A call started at {@code startNanos} (ticker time) ended with {@code code}. */
  @VisibleForTesting
  void callEnded(long startNanos, Status.Code code) {
    outstanding.decrementAndGet();
    boolean failure = isServerFailure(code);
    boolean latencySample = code == Status.Code.OK || code == Status.Code.DEADLINE_EXCEEDED;
    if (!failure && code != Status.Code.OK) {
      return;
    }
    long now = ticker.read();
    synchronized (this) {
      if (latencySample) {
        double sample = Math.max(0, now - startNanos);
        double previous = latencyNanos;
        if (sample >= previous) {
          latencyNanos = sample;
        } else {
          latencyNanos = previous + decayWeight(now - lastLatencySampleNanos) * (sample - previous);
        }
        lastLatencySampleNanos = now;
      }
      double outcome = failure ? 0.0 : 1.0;
      successRatio += decayWeight(now - lastSuccessSampleNanos) * (outcome - successRatio);
      lastSuccessSampleNanos = now;
      updatePenalty();
    }
  }

  /** Weight of a new sample {@code elapsedNanos} after the previous one: 1 - exp(-dt / decay). */
  private double decayWeight(long elapsedNanos) {
    return -Math.expm1(-Math.max(0, elapsedNanos) / (double) decayNanos);
  }

  private void updatePenalty() {
    errorCost = errorPenalty * (1.0 - successRatio);
    penalty = 1.0 / (1.0 - Math.min(utilization, MAX_UTILIZATION));
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
        + outstanding.get()
        + ", latencyMillis="
        + String.format("%.2f", latencyNanos / 1e6)
        + ", penalty="
        + String.format("%.3f", penalty)
        + ", errorCost="
        + String.format("%.3f", errorCost)
        + "}";
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
      startNanos = ticker.read();
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
