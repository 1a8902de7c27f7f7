package io.steelyard.testkit.grpc;

import static java.util.Objects.requireNonNull;

import com.google.common.base.Ticker;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A gRPC service whose capacity is modelled: {@code workers} workers, each call holding one for a
 * service time drawn uniformly from {@code [S/2, 3S/2]} (mean {@code S}), excess calls waiting in
 * an unbounded FIFO queue. It answers {@link #METHOD} with its own name. Use it to test and
 * measure how a load balancer copes with servers of different, changing capacity.
 *
 * <pre>{@code
 * CapacityBackend backend = new CapacityBackend("a", 4, Duration.ofMillis(20), scheduler, new Random(1));
 * Server server = Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create())
 *     .addService(backend.service()).build().start();
 * backend.setSlowdown(4);        // from now on, service times are 4x longer
 * backend.setFailureRatio(0.5);  // from now on, half the calls fail at once with UNAVAILABLE
 * backend.startWarmUp(4, Duration.ofSeconds(4)); // cold: 4x slower now, normal again in 4 s
 * }</pre>
 *
 * <p><b>Overload is honest</b>: a call's worker and start time are fixed when it arrives (FCFS
 * over {@code workers} servers), and the server finishes every call it accepted, even one whose
 * client deadline passed or which was cancelled: like most servers, it does not look at the
 * deadline while the call waits in its queue. Service happens in virtual time: no thread sleeps;
 * each reply is sent by {@code scheduler} at the call's end time, so many backends share one
 * timer thread. An injected failure is answered at once and takes no worker.
 *
 * <p>Threading: thread-safe; arrivals synchronize on the backend for the few nanoseconds that the
 * worker choice takes.
 */
public final class CapacityBackend {

  /** Strings as UTF-8. */
  public static final MethodDescriptor.Marshaller<String> UTF8 =
      new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(String value) {
          return new ByteArrayInputStream(value.getBytes(StandardCharsets.UTF_8));
        }

        @Override
        public String parse(InputStream stream) {
          try {
            return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
        }
      };

  /** The one method: any request; the reply is the backend's name. */
  public static final MethodDescriptor<String, String> METHOD =
      MethodDescriptor.<String, String>newBuilder()
          .setType(MethodDescriptor.MethodType.UNARY)
          .setFullMethodName("steelyard.test.Capacity/Call")
          .setRequestMarshaller(UTF8)
          .setResponseMarshaller(UTF8)
          .build();

  private final String name;
  private final long serviceNanos;
  private final ScheduledExecutorService scheduler;
  private final Random random;
  private final Ticker ticker;

  private final long[] freeAtNanos;
  private final AtomicLong arrivals = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();
  private final AtomicLong completions = new AtomicLong();
  private volatile double slowdown = 1.0;
  private volatile double failureRatio;
  private volatile WarmUp warmUp = WarmUp.NONE;

  /**
   * A backend named {@code name} with {@code workers} workers of mean service time {@code
   * serviceTime}; replies are sent on {@code scheduler} (not owned: the caller shuts it down);
   * service times and injected failures draw from {@code random}.
   */
  public CapacityBackend(
      String name,
      int workers,
      Duration serviceTime,
      ScheduledExecutorService scheduler,
      Random random) {
    this(name, workers, serviceTime, scheduler, random, Ticker.systemTicker());
  }

  /** As above, with time read from {@code ticker} (a test's fake clock) instead of the system's. */
  public CapacityBackend(
      String name,
      int workers,
      Duration serviceTime,
      ScheduledExecutorService scheduler,
      Random random,
      Ticker ticker) {
    if (workers < 1) {
      throw new IllegalArgumentException("workers: " + workers + " (expected: >= 1)");
    }
    if (serviceTime.isNegative() || serviceTime.isZero()) {
      throw new IllegalArgumentException("serviceTime: " + serviceTime + " (expected: > 0)");
    }
    this.name = requireNonNull(name, "name");
    this.serviceNanos = serviceTime.toNanos();
    this.scheduler = requireNonNull(scheduler, "scheduler");
    this.random = requireNonNull(random, "random");
    this.ticker = requireNonNull(ticker, "ticker");
    this.freeAtNanos = new long[workers];
    Arrays.fill(freeAtNanos, ticker.read()); // all free; compared by subtraction only
  }

  /** The name this backend replies with. */
  public String name() {
    return name;
  }

  /** Number of workers. */
  public int workers() {
    return freeAtNanos.length;
  }

  /** The service to add to a server. */
  public ServerServiceDefinition service() {
    return ServerServiceDefinition.builder("steelyard.test.Capacity")
        .addMethod(METHOD, new Handler())
        .build();
  }

  /** Service times of calls arriving from now on are multiplied by {@code factor} (1 = normal). */
  public void setSlowdown(double factor) {
    if (!(factor > 0)) {
      throw new IllegalArgumentException("factor: " + factor + " (expected: > 0)");
    }
    this.slowdown = factor;
  }

  /**
   * A cold start from now on (JIT still compiling, caches empty): service times of calls arriving
   * now are {@code factor} times longer, falling linearly to normal over {@code duration}. It
   * multiplies with {@link #setSlowdown}; a later call starts a new warm-up.
   */
  public void startWarmUp(double factor, Duration duration) {
    if (!(factor >= 1)) {
      throw new IllegalArgumentException("factor: " + factor + " (expected: >= 1)");
    }
    if (duration.isNegative() || duration.isZero()) {
      throw new IllegalArgumentException("duration: " + duration + " (expected: > 0)");
    }
    this.warmUp = new WarmUp(ticker.read(), duration.toNanos(), factor);
  }

  /**
   * What service times of calls arriving now are multiplied by: the {@linkplain #setSlowdown
   * slowdown} times the {@linkplain #startWarmUp warm-up} factor left at this instant.
   */
  public double serviceTimeFactor() {
    return serviceTimeFactor(ticker.read());
  }

  private double serviceTimeFactor(long now) {
    return slowdown * warmUp.factorAt(now);
  }

  /** From now on each arriving call fails at once with probability {@code ratio}. */
  public void setFailureRatio(double ratio) {
    if (!(ratio >= 0 && ratio <= 1)) {
      throw new IllegalArgumentException("ratio: " + ratio + " (expected: 0..1)");
    }
    this.failureRatio = ratio;
  }

  /** Calls received so far, failed or not. */
  public long arrivals() {
    return arrivals.get();
  }

  /** Calls failed on purpose so far. */
  public long injectedFailures() {
    return failures.get();
  }

  /** Calls answered successfully so far (including ones whose client had given up). */
  public long completions() {
    return completions.get();
  }

  /** Workers busy at this instant, {@code 0..workers}. */
  public synchronized int busyWorkers() {
    long now = ticker.read();
    int busy = 0;
    for (long freeAt : freeAtNanos) {
      if (freeAt - now > 0) {
        busy++;
      }
    }
    return busy;
  }

  /**
   * Work accepted and not yet done, in units of one worker's full time: {@code >1} means calls
   * are queueing. {@code backlog / workers} is the time to drain, in service times.
   */
  public synchronized double backlog() {
    long now = ticker.read();
    long pending = 0;
    for (long freeAt : freeAtNanos) {
      pending += Math.max(0, freeAt - now);
    }
    return pending / (double) serviceNanos;
  }

  /**
   * Reserves a worker for a call arriving at {@code now} (this backend's ticker time); returns
   * the delay until its reply, in nanos.
   */
  long admit(long now) {
    double factor = serviceTimeFactor(now);
    long service;
    synchronized (this) {
      service = (long) (serviceNanos * factor * (0.5 + random.nextDouble()));
      int earliest = 0;
      for (int w = 1; w < freeAtNanos.length; w++) {
        if (freeAtNanos[w] - freeAtNanos[earliest] < 0) {
          earliest = w;
        }
      }
      long start = freeAtNanos[earliest] - now > 0 ? freeAtNanos[earliest] : now;
      freeAtNanos[earliest] = start + service;
      return start + service - now;
    }
  }

  private boolean injectFailure() {
    double ratio = failureRatio;
    if (ratio == 0) {
      return false;
    }
    synchronized (this) {
      return random.nextDouble() < ratio;
    }
  }

  /** A warm-up begun at {@code startNanos}: {@code factor} then, 1 from {@code durationNanos} on. */
  private record WarmUp(long startNanos, long durationNanos, double factor) {
    static final WarmUp NONE = new WarmUp(0, 1, 1.0);

    double factorAt(long now) {
      if (factor == 1.0) {
        return 1.0;
      }
      double left = 1 - (now - startNanos) / (double) durationNanos;
      return 1 + (factor - 1) * Math.max(0, Math.min(1, left));
    }
  }

  private final class Handler implements ServerCallHandler<String, String> {
    @Override
    public ServerCall.Listener<String> startCall(ServerCall<String, String> call, Metadata headers) {
      call.request(1);
      return new ServerCall.Listener<>() {
        @Override
        public void onHalfClose() {
          arrivals.incrementAndGet();
          if (injectFailure()) {
            failures.incrementAndGet();
            call.close(Status.UNAVAILABLE.withDescription(name + ": injected failure"), new Metadata());
            return;
          }
          long delay = admit(ticker.read());
          scheduler.schedule(() -> reply(call), delay, TimeUnit.NANOSECONDS);
        }
      };
    }

    private void reply(ServerCall<String, String> call) {
      completions.incrementAndGet();
      if (call.isCancelled()) {
        return; // the client gave up (deadline, cancel); the work was done all the same
      }
      try {
        call.sendHeaders(new Metadata());
        call.sendMessage(name);
        call.close(Status.OK, new Metadata());
      } catch (IllegalStateException e) {
        // Cancelled between the check and the send: nothing to answer.
      }
    }
  }
}
