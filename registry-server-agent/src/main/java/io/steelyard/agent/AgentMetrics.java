package io.steelyard.agent;

import static java.util.Objects.requireNonNull;

import io.grpc.Metadata;
import io.grpc.ServerStreamTracer;
import io.grpc.Status;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The agent's meters in a Micrometer {@link MeterRegistry}: a registration's state, weight and
 * recoveries, and the calls a server answers. The one entry point of this module's metrics (a
 * Spring Boot starter binds its {@code MeterRegistry} here); every meter is listed in {@code
 * docs/metrics.md}.
 *
 * <pre>{@code
 * AgentMetrics metrics = AgentMetrics.of(meterRegistry);
 * Server server = NettyServerBuilder.forPort(50051).addService(greeter)
 *     .addStreamTracerFactory(metrics.serverCalls("greeter"))   // calls, status, latency
 *     .build().start();
 * ServiceRegistration reg = ServiceRegistration.builder(etcd, "greeter", "10.0.0.7:50051").build();
 * AutoCloseable meters = metrics.bind(reg);   // registered, weight, recoveries by cause
 * }</pre>
 *
 * <p>Micrometer is an optional dependency of the agent: only this class needs it, and without it
 * (or without calling this class) nothing is measured and nothing costs.
 *
 * <p>Threading: thread-safe. Gauges read the registration's volatile state when scraped; the
 * recovery counter is incremented on the registration's thread; the call meters are updated on
 * the thread that closes each call and are cached per (method, status), so a call costs two map
 * lookups and no registration.
 */
public final class AgentMetrics {

  /** 1 while the key is in etcd under the registration's live lease, else 0. */
  public static final String REGISTERED = "steelyard.registration.registered";
  /** The weight the registration writes (0 while drained). */
  public static final String WEIGHT = "steelyard.registration.weight";
  /** Lease losses, by {@link RecoveryCause#tag() cause}. */
  public static final String RECOVERIES = "steelyard.registration.recoveries";
  /** Calls answered, by method and status code. */
  public static final String SERVER_CALLS = "steelyard.server.calls";
  /** Time from a call's start to its close on the server, by method (a histogram). */
  public static final String SERVER_CALL_DURATION = "steelyard.server.call.duration";
  /** {@link #SERVER_CALLS} as a Prometheus registry names it (read back by {@link ServerMeters}). */
  public static final String SERVER_CALLS_PROMETHEUS = "steelyard_server_calls_total";
  /**
   * The buckets of {@link #SERVER_CALL_DURATION} as a Prometheus registry names them (read back by
   * {@link ServerMeters}).
   */
  public static final String SERVER_CALL_DURATION_BUCKET_PROMETHEUS =
      "steelyard_server_call_duration_seconds_bucket";

  private final MeterRegistry registry;

  private AgentMetrics(MeterRegistry registry) {
    this.registry = requireNonNull(registry, "registry");
  }

  /** Meters of this module in {@code registry}. */
  public static AgentMetrics of(MeterRegistry registry) {
    return new AgentMetrics(registry);
  }

  /**
   * Registers {@code registration}'s meters (tags {@code service}, {@code address}): {@value
   * #REGISTERED}, {@value #WEIGHT} and {@value #RECOVERIES} (tag {@code cause}, each cause
   * present from 0). Closing the returned handle removes them; recoveries that happen before
   * this call are not counted.
   */
  public AutoCloseable bind(ServiceRegistration registration) {
    requireNonNull(registration, "registration");
    Tags tags = Tags.of("service", registration.service(), "address", registration.address());
    List<Meter> meters = new ArrayList<>();
    meters.add(
        Gauge.builder(REGISTERED, registration,
                r -> r.state() == RegistrationState.REGISTERED ? 1 : 0)
            .description("1 while the instance's key is in etcd under its live lease, else 0")
            .tags(tags)
            .strongReference(true)
            .register(registry));
    meters.add(
        Gauge.builder(WEIGHT, registration, ServiceRegistration::weight)
            .description("the weight the registration writes; 0 = drained")
            .tags(tags)
            .strongReference(true)
            .register(registry));
    Map<RecoveryCause, Counter> recoveries = new EnumMap<>(RecoveryCause.class);
    for (RecoveryCause cause : RecoveryCause.values()) {
      Counter c =
          Counter.builder(RECOVERIES)
              .description("lease losses after which the registration registered again")
              .tags(tags)
              .tag("cause", cause.tag())
              .register(registry);
      recoveries.put(cause, c);
      meters.add(c);
    }
    Binding binding = new Binding(meters, recoveries);
    registration.addListener(binding);
    return binding;
  }

  /**
   * A server stream tracer counting every call the server closes ({@value #SERVER_CALLS}, tags
   * {@code service}, {@code method}, {@code status}) and timing it ({@value
   * #SERVER_CALL_DURATION}, tags {@code service}, {@code method}; a percentile histogram from
   * 100 µs to 30 s), cancelled calls included. Add it with {@code
   * ServerBuilder.addStreamTracerFactory}.
   */
  public ServerStreamTracer.Factory serverCalls(String service) {
    return new ServerCallMeters(registry, requireNonNull(service, "service"));
  }

  /** A registration's meters; counts recoveries while open. */
  private final class Binding implements RegistrationListener, AutoCloseable {
    private final List<Meter> meters;
    private final Map<RecoveryCause, Counter> recoveries;
    private volatile boolean closed;

    Binding(List<Meter> meters, Map<RecoveryCause, Counter> recoveries) {
      this.meters = meters;
      this.recoveries = recoveries;
    }

    @Override
    public void onStateChanged(RegistrationState state) {}

    @Override
    public void onRecovery(RecoveryCause cause) {
      if (!closed) {
        recoveries.get(cause).increment();
      }
    }

    @Override
    public void close() {
      closed = true;
      meters.forEach(registry::remove);
    }
  }

  /** The server's call meters; one tracer per call. */
  private static final class ServerCallMeters extends ServerStreamTracer.Factory {
    private final MeterRegistry registry;
    private final String service;
    private final ConcurrentHashMap<String, Timer> timers = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Map<Status.Code, Counter>> counters =
        new ConcurrentHashMap<>();

    ServerCallMeters(MeterRegistry registry, String service) {
      this.registry = registry;
      this.service = service;
    }

    @Override
    public ServerStreamTracer newServerStreamTracer(String fullMethodName, Metadata headers) {
      long start = registry.config().clock().monotonicTime();
      return new ServerStreamTracer() {
        @Override
        public void streamClosed(Status status) {
          long nanos = registry.config().clock().monotonicTime() - start;
          timer(fullMethodName).record(nanos, TimeUnit.NANOSECONDS);
          counter(fullMethodName, status.getCode()).increment();
        }
      };
    }

    private Timer timer(String method) {
      return timers.computeIfAbsent(
          method,
          m ->
              Timer.builder(SERVER_CALL_DURATION)
                  .description("time from a call's start to its close on the server")
                  .tags("service", service, "method", m)
                  .publishPercentileHistogram()
                  .minimumExpectedValue(Duration.ofNanos(100_000))
                  .maximumExpectedValue(Duration.ofSeconds(30))
                  .register(registry));
    }

    private Counter counter(String method, Status.Code code) {
      Map<Status.Code, Counter> byCode =
          counters.computeIfAbsent(method, m -> new ConcurrentHashMap<>());
      return byCode.computeIfAbsent(
          code,
          c ->
              Counter.builder(SERVER_CALLS)
                  .description("calls closed by the server")
                  .tags("service", service, "method", method, "status", c.name())
                  .register(registry));
    }
  }
}
