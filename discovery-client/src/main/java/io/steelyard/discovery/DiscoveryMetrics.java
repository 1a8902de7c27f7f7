package io.steelyard.discovery;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;
import java.util.function.ToDoubleFunction;
import javax.annotation.concurrent.GuardedBy;

/**
 * The discovery client's meters in a Micrometer {@link MeterRegistry}: the one entry point of
 * this module's metrics, a {@link MeterBinder} (a Spring Boot application declares it as a bean
 * and Boot binds it). Every meter is listed in {@code docs/metrics.md}.
 *
 * <pre>{@code
 * DiscoveryMetrics discovery = new DiscoveryMetrics();
 * discovery.bindTo(meterRegistry);   // every etcd: channel and ServiceWatcher of the process
 * ...
 * discovery.close();                 // removes the meters
 * }</pre>
 *
 * <p>Per service (tag {@code service}): {@value #INSTANCES}, {@value #STALE} (0 while fresh),
 * {@value #MALFORMED}, {@value #RELISTS} (tag {@code cause}), {@value #STALE_EVENTS} (watch
 * events older than the view, skipped; only etcd's gRPC proxy sends them) and {@value #PROPAGATION}, the time
 * from a watch response arriving from etcd to a channel's balancer holding the change (one
 * sample per channel). Process-wide: {@value #WATCHES} and {@value #ETCD_CLIENTS}. A service's
 * meters appear with its first watcher and go with its last. When one process watches a service
 * in two places (two etcd clusters or prefixes), its meters add the counts of both and show the
 * larger instance count and staleness.
 *
 * <p>It observes the process-wide watch registry, as {@link DiscoveryStats} does; Micrometer is
 * an optional dependency and nothing else in the module needs it. Thread-safe.
 */
public final class DiscoveryMetrics implements MeterBinder, AutoCloseable {

  public static final String INSTANCES = "steelyard.discovery.instances";
  public static final String STALE = "steelyard.discovery.stale";
  public static final String MALFORMED = "steelyard.discovery.malformed";
  public static final String RELISTS = "steelyard.discovery.relists";
  public static final String STALE_EVENTS = "steelyard.discovery.stale.events";
  public static final String PROPAGATION = "steelyard.discovery.propagation";
  public static final String WATCHES = "steelyard.discovery.watches";
  public static final String ETCD_CLIENTS = "steelyard.discovery.etcd.clients";

  private final WatchRegistry watches;

  @GuardedBy("this")
  private final List<Binding> bindings = new ArrayList<>();

  /** Meters of the process-wide watch registry, shared by every channel and ServiceWatcher. */
  public DiscoveryMetrics() {
    this(WatchRegistry.SHARED);
  }

  DiscoveryMetrics(WatchRegistry watches) {
    this.watches = watches;
  }

  /** Registers the meters in {@code registry}; may be called for several registries. */
  @Override
  public void bindTo(MeterRegistry registry) {
    Binding b = new Binding(registry);
    synchronized (this) {
      bindings.add(b);
    }
    b.start();
  }

  /** Removes every meter this binder registered and stops observing. */
  @Override
  public void close() {
    List<Binding> all;
    synchronized (this) {
      all = new ArrayList<>(bindings);
      bindings.clear();
    }
    all.forEach(Binding::close);
  }

  /** The meters of one registry. */
  private final class Binding implements WatchRegistry.WatcherObserver {
    private final MeterRegistry registry;
    private final List<Meter> processMeters = new ArrayList<>();

    @GuardedBy("this")
    private final Map<String, ServiceMeters> services = new HashMap<>();

    private AutoCloseable observation = () -> {};

    Binding(MeterRegistry registry) {
      this.registry = registry;
    }

    void start() {
      processMeters.add(
          Gauge.builder(WATCHES, watches, w -> w.stats().activeWatches())
              .description("shared etcd watchers alive (one per etcd, prefix and service)")
              .register(registry));
      processMeters.add(
          Gauge.builder(ETCD_CLIENTS, watches, w -> w.stats().etcdClients())
              .description("shared etcd clients alive (one per etcd connection)")
              .register(registry));
      observation = watches.observe(this);
    }

    @Override
    public synchronized void started(PrefixWatcher watcher) {
      services.computeIfAbsent(watcher.service(), s -> new ServiceMeters(registry, s)).add(watcher);
    }

    @Override
    public synchronized void stopped(PrefixWatcher watcher) {
      ServiceMeters m = services.get(watcher.service());
      if (m != null && m.remove(watcher)) {
        services.remove(watcher.service());
      }
    }

    void close() {
      try {
        observation.close();
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
      synchronized (this) {
        services.values().forEach(ServiceMeters::close);
        services.clear();
      }
      processMeters.forEach(registry::remove);
    }
  }

  /**
   * One service's meters in one registry, over its live watchers. Counts of a watcher that stops
   * while another of the same service lives are kept, so the counters never go backwards.
   */
  private static final class ServiceMeters {
    private final MeterRegistry registry;
    private final CopyOnWriteArrayList<PrefixWatcher> live = new CopyOnWriteArrayList<>();
    private final List<Meter> meters = new ArrayList<>();
    private final Timer propagation;
    private final LongConsumer sink;
    private volatile long retiredMalformed;
    private volatile long retiredStaleEvents;
    private final Map<RelistCause, Long> retiredRelists = new EnumMap<>(RelistCause.class);

    ServiceMeters(MeterRegistry registry, String service) {
      this.registry = registry;
      meters.add(gauge(INSTANCES, service, "instances in the last view of the service",
          m -> m.max(w -> w.counters().instances())));
      meters.add(
          Gauge.builder(STALE, this, m -> m.max(PrefixWatcher::staleSeconds))
              .description("how long etcd has been unreachable for this service's watch; 0 while fresh")
              .baseUnit("seconds")
              .tag("service", service)
              .register(registry));
      meters.add(
          FunctionCounter.builder(MALFORMED, this,
                  m -> m.retiredMalformed + m.sum(w -> w.counters().malformedCount()))
              .description("values skipped as malformed, once per key version")
              .tag("service", service)
              .register(registry));
      meters.add(
          FunctionCounter.builder(STALE_EVENTS, this,
                  m -> m.retiredStaleEvents + m.sum(w -> w.counters().staleEventsSkipped()))
              .description("watch events at or below the applied revision, skipped (a gRPC proxy"
                  + " may send them)")
              .tag("service", service)
              .register(registry));
      for (RelistCause cause : RelistCause.values()) {
        meters.add(
            FunctionCounter.builder(RELISTS, this,
                    m -> m.retiredRelists(cause) + m.sum(w -> w.counters().relists(cause)))
                .description("listings after the first one, by cause")
                .tags("service", service, "cause", cause.tag())
                .register(registry));
      }
      propagation =
          Timer.builder(PROPAGATION)
              .description("time from a watch response arriving from etcd to a channel's balancer"
                  + " holding the change")
              .tag("service", service)
              .publishPercentileHistogram()
              .minimumExpectedValue(Duration.ofNanos(100_000))
              .maximumExpectedValue(Duration.ofSeconds(10))
              .register(registry);
      meters.add(propagation);
      sink = nanos -> propagation.record(nanos, TimeUnit.NANOSECONDS);
    }

    private Meter gauge(String name, String service, String description,
        ToDoubleFunction<ServiceMeters> f) {
      return Gauge.builder(name, this, f).description(description).tag("service", service)
          .register(registry);
    }

    void add(PrefixWatcher w) {
      live.add(w);
      w.counters().addPropagationSink(sink);
    }

    /** Returns whether it was the last watcher of the service (the meters are then removed). */
    boolean remove(PrefixWatcher w) {
      if (!live.remove(w)) {
        return false;
      }
      w.counters().removePropagationSink(sink);
      if (live.isEmpty()) {
        close();
        return true;
      }
      synchronized (retiredRelists) {
        retiredMalformed += w.counters().malformedCount();
        retiredStaleEvents += w.counters().staleEventsSkipped();
        for (RelistCause c : RelistCause.values()) {
          retiredRelists.merge(c, w.counters().relists(c), Long::sum);
        }
      }
      return false;
    }

    void close() {
      for (PrefixWatcher w : live) {
        w.counters().removePropagationSink(sink);
      }
      meters.forEach(registry::remove);
    }

    private long retiredRelists(RelistCause cause) {
      synchronized (retiredRelists) {
        return retiredRelists.getOrDefault(cause, 0L);
      }
    }

    private double max(ToDoubleFunction<PrefixWatcher> f) {
      double max = 0;
      for (PrefixWatcher w : live) {
        max = Math.max(max, f.applyAsDouble(w));
      }
      return max;
    }

    private double sum(ToDoubleFunction<PrefixWatcher> f) {
      double sum = 0;
      for (PrefixWatcher w : live) {
        sum += f.applyAsDouble(w);
      }
      return sum;
    }
  }
}
