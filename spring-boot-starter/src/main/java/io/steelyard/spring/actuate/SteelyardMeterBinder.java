package io.steelyard.spring.actuate;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.steelyard.agent.AgentMetrics;
import io.steelyard.discovery.DiscoveryMetrics;
import io.steelyard.discovery.DiscoveryStats;
import io.steelyard.spring.GrpcServerRegistration;
import javax.annotation.Nullable;

/**
 * The starter's part of steelyard's meters, bound to every Boot {@code MeterRegistry} (Boot binds
 * each {@link MeterBinder} bean). Each meter has one definition, in the module that measures it
 * ({@code docs/metrics.md} lists them); this binder only connects them to Boot:
 *
 * <ul>
 *   <li>the registration's meters are {@link AgentMetrics#bind}'s (tags {@code service}, {@code
 *       address}), bound to each registration {@link GrpcServerRegistration} makes;
 *   <li>the discovery meters come from the {@link DiscoveryMetrics} bean (the starter declares one
 *       unless the application does), not from here;
 *   <li>the one meter no module defines: {@value #ETCD_WATCHES}, etcd watch streams open
 *       (process-wide, no tags; below {@code steelyard.discovery.watches} while some watchers wait
 *       to list or to retry).
 * </ul>
 *
 * <p>An application must not bind {@code AgentMetrics} to the starter's registration itself: the
 * starter does, and a second binding would count each recovery twice.
 */
public final class SteelyardMeterBinder implements MeterBinder {

  /** etcd watch streams open in this JVM. */
  public static final String ETCD_WATCHES = "steelyard.discovery.etcd.watches";

  @Nullable private final GrpcServerRegistration registration;

  public SteelyardMeterBinder(@Nullable GrpcServerRegistration registration) {
    this.registration = registration;
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    if (registration != null) {
      registration.bindEach(AgentMetrics.of(registry)::bind);
    }
    Gauge.builder(ETCD_WATCHES, DiscoveryStats::openEtcdWatches)
        .description("etcd watch streams open")
        .register(registry);
  }
}
