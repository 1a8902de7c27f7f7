package io.steelyard.balancer;

import static java.util.Objects.requireNonNull;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientStreamTracer;
import io.grpc.Grpc;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.steelyard.balancer.spi.BalancerObserver;
import io.steelyard.balancer.spi.EndpointState;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import javax.annotation.concurrent.GuardedBy;

/**
 * The client side's meters in a Micrometer {@link MeterRegistry}: what each channel's balancer
 * sees per backend, and every call per backend. The one entry point of this module's metrics;
 * every meter is listed in {@code docs/metrics.md}.
 *
 * <pre>{@code
 * BalancerMetrics metrics = BalancerMetrics.of(meterRegistry);
 * ManagedChannel channel = metrics.configure(
 *         Grpc.newChannelBuilder("etcd:///greeter", InsecureChannelCredentials.create()))
 *     .defaultLoadBalancingPolicy("weighted_random")
 *     .build();
 * }</pre>
 *
 * <p>{@link #configure} does two things, each also available alone: it gives the channel's
 * steelyard balancers (every policy) an observer ({@link #balancerArgument()}), which keeps
 * {@value #WEIGHT} and {@value #READY} per backend, and it adds {@link #clientInterceptor()},
 * which counts and times every call by the backend that served it ({@value #CALLS}, {@value
 * #CALL_DURATION}). Tags: {@code service} is the channel's authority (the service name of
 * {@code etcd:///SERVICE}), {@code backend} the {@code HOST:PORT} the call went to ({@code none}
 * when it never reached one, e.g. no backend was READY before the deadline).
 *
 * <p>Cost: nothing on the pick path. The observer runs where a balancer builds its picker, i.e.
 * on connectivity and weight changes; the call meters cost a stream tracer per call and a map
 * lookup per finished call. Without this class (Micrometer is an optional dependency) a
 * balancer observes nothing.
 *
 * <p>Threading: thread-safe; one instance may serve any number of channels. Channels of one
 * service share its per-backend meters: the weight shown is the largest any of them uses, and
 * the readiness the best any of them has.
 */
public final class BalancerMetrics {

  /** The effective weight a balancer's picker uses for a backend (0: not picked, e.g. drained). */
  public static final String WEIGHT = "steelyard.balancer.weight";
  /** 1 if the backend is READY, else 0; tag {@code reason} says why (see docs/metrics.md). */
  public static final String READY = "steelyard.balancer.ready";
  /** Calls by backend, method and status code. */
  public static final String CALLS = "steelyard.client.calls";
  /** Call duration by backend and method, from the stream's creation to its close (histogram). */
  public static final String CALL_DURATION = "steelyard.client.call.duration";

  /** The {@code backend} tag of a call that never reached a backend. */
  public static final String NO_BACKEND = "none";

  private final MeterRegistry registry;
  private final BalancerObserver.Factory observers = this::newObserver;
  private final ClientInterceptor interceptor = new CallsInterceptor();

  /** Service, then backend. */
  @GuardedBy("this")
  private final Map<String, Map<String, BackendMeters>> services = new HashMap<>();

  private final ConcurrentHashMap<CallKey, Counter> calls = new ConcurrentHashMap<>();
  private final ConcurrentHashMap<TimerKey, Timer> timers = new ConcurrentHashMap<>();

  private BalancerMetrics(MeterRegistry registry) {
    this.registry = requireNonNull(registry, "registry");
  }

  /** Meters of this module in {@code registry}. */
  public static BalancerMetrics of(MeterRegistry registry) {
    return new BalancerMetrics(registry);
  }

  /** Adds the balancer observer and the call interceptor to {@code builder}; returns it. */
  public <T extends ManagedChannelBuilder<?>> T configure(T builder) {
    builder.setNameResolverArg(BalancerObserver.KEY, observers);
    builder.intercept(interceptor);
    return builder;
  }

  /**
   * The value of {@code setNameResolverArg(BalancerObserver.KEY, ...)} that {@link #configure}
   * sets, for a builder configured elsewhere.
   */
  public BalancerObserver.Factory balancerArgument() {
    return observers;
  }

  /** Counts and times every call by backend, method and status. */
  public ClientInterceptor clientInterceptor() {
    return interceptor;
  }

  /**
   * The backends of {@code service} as the channels' balancers see them now, sorted by address:
   * for a report that says why no backend takes calls.
   */
  public synchronized List<EndpointState> backends(String service) {
    List<EndpointState> out = new ArrayList<>();
    services.getOrDefault(service, Map.of()).values().forEach(m -> out.add(m.best()));
    out.sort(Comparator.comparing(EndpointState::backend));
    return out;
  }

  private BalancerObserver newObserver(String service) {
    return new BalancerObserver() {
      @Override
      public void update(List<EndpointState> endpoints) {
        BalancerMetrics.this.update(this, service, endpoints);
      }

      @Override
      public void close() {
        BalancerMetrics.this.update(this, service, List.of());
      }
    };
  }

  private record BackendKey(String service, String backend) {}

  /** Replaces what {@code observer} (one balancer) sees of {@code service}. */
  private synchronized void update(
      BalancerObserver observer, String service, List<EndpointState> endpoints) {
    Map<String, EndpointState> now = new HashMap<>();
    for (EndpointState e : endpoints) {
      now.put(e.backend(), e);
    }
    Map<String, BackendMeters> backends = services.computeIfAbsent(service, s -> new HashMap<>());
    List<String> gone = new ArrayList<>();
    backends.forEach((backend, m) -> {
      if (!now.containsKey(backend) && m.remove(observer)) {
        gone.add(backend);
      }
    });
    gone.forEach(backend -> backends.remove(backend).close());
    now.forEach((backend, e) -> backends
        .computeIfAbsent(backend, b -> new BackendMeters(new BackendKey(service, b)))
        .put(observer, e));
    if (backends.isEmpty()) {
      services.remove(service);
    }
  }

  /** One backend's gauges, over the balancers (channels) that know it. Guarded by the outer lock. */
  private final class BackendMeters {
    private final BackendKey key;
    private final Map<BalancerObserver, EndpointState> byBalancer = new IdentityHashMap<>();
    private final Gauge weight;
    private volatile int weightValue;
    private volatile int readyValue;
    private Gauge ready;
    private String reason = "";

    BackendMeters(BackendKey key) {
      this.key = key;
      this.weight =
          Gauge.builder(WEIGHT, this, m -> m.weightValue)
              .description("the effective weight the balancer's picker uses; 0 = not picked")
              .tags("service", key.service(), "backend", key.backend())
              .register(registry);
    }

    void put(BalancerObserver observer, EndpointState state) {
      byBalancer.put(observer, state);
      refresh();
    }

    /** Returns whether no balancer knows the backend any more. */
    boolean remove(BalancerObserver observer) {
      if (byBalancer.remove(observer) != null && !byBalancer.isEmpty()) {
        refresh();
      }
      return byBalancer.isEmpty();
    }

    EndpointState best() {
      EndpointState best = null;
      for (EndpointState e : byBalancer.values()) {
        if (best == null || rank(e) > rank(best)
            || (rank(e) == rank(best) && e.effectiveWeight() > best.effectiveWeight())) {
          best = e;
        }
      }
      return best;
    }

    private int rank(EndpointState e) {
      switch (e.state()) {
        case READY:
          return 3;
        case CONNECTING:
        case IDLE:
          return 2;
        case TRANSIENT_FAILURE:
          return 1;
        default:
          return 0;
      }
    }

    private void refresh() {
      EndpointState best = best();
      int max = 0;
      for (EndpointState e : byBalancer.values()) {
        max = Math.max(max, e.effectiveWeight());
      }
      weightValue = max;
      readyValue = best.ready() ? 1 : 0;
      String why = best.reason();
      if (!why.equals(reason)) {
        // The reason is a tag: a new one is a new series, and the old one must go.
        if (ready != null) {
          registry.remove(ready);
        }
        reason = why;
        ready =
            Gauge.builder(READY, this, m -> m.readyValue)
                .description("1 if the backend is READY, else 0; reason says why")
                .tags("service", key.service(), "backend", key.backend(), "reason", why)
                .register(registry);
      }
    }

    void close() {
      registry.remove(weight);
      if (ready != null) {
        registry.remove(ready);
      }
    }
  }

  private record CallKey(String service, String backend, String method, Status.Code code) {}

  private record TimerKey(String service, String backend, String method) {}

  private Counter counter(CallKey k) {
    return calls.computeIfAbsent(k, c ->
        Counter.builder(CALLS)
            .description("calls by the backend that served them, method and status")
            .tags("service", c.service(), "backend", c.backend(), "method", c.method(),
                "status", c.code().name())
            .register(registry));
  }

  private Timer timer(TimerKey k) {
    return timers.computeIfAbsent(k, t ->
        Timer.builder(CALL_DURATION)
            .description("call duration by backend, from the stream's creation to its close")
            .tags("service", t.service(), "backend", t.backend(), "method", t.method())
            .publishPercentileHistogram()
            .minimumExpectedValue(Duration.ofNanos(100_000))
            .maximumExpectedValue(Duration.ofSeconds(30))
            .register(registry));
  }

  /** Puts a stream tracer on every call: the tracer is told the backend and the final status. */
  private final class CallsInterceptor implements ClientInterceptor {
    @Override
    public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(
        MethodDescriptor<ReqT, RespT> method, CallOptions callOptions, Channel next) {
      String service = next.authority();
      String name = method.getFullMethodName();
      return next.newCall(method, callOptions.withStreamTracerFactory(
          new ClientStreamTracer.Factory() {
            @Override
            public ClientStreamTracer newClientStreamTracer(
                ClientStreamTracer.StreamInfo info, Metadata headers) {
              return new CallTracer(service, name);
            }
          }));
    }
  }

  /** One attempt of one call. */
  private final class CallTracer extends ClientStreamTracer {
    private final String service;
    private final String method;
    private final long startNanos = registry.config().clock().monotonicTime();
    private volatile String backend = NO_BACKEND;

    CallTracer(String service, String method) {
      this.service = service;
      this.method = method;
    }

    @Override
    public void streamCreated(io.grpc.Attributes transportAttrs, Metadata headers) {
      java.net.SocketAddress remote = transportAttrs.get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
      backend = remote == null ? NO_BACKEND : EndpointState.label(remote);
    }

    @Override
    public void streamClosed(Status status) {
      long nanos = registry.config().clock().monotonicTime() - startNanos;
      String b = backend;
      counter(new CallKey(service, b, method, status.getCode())).increment();
      timer(new TimerKey(service, b, method)).record(nanos, TimeUnit.NANOSECONDS);
    }
  }
}
