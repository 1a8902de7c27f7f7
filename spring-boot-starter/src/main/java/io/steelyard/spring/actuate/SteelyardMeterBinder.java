package io.steelyard.spring.actuate;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.steelyard.agent.RegistrationState;
import io.steelyard.agent.ServiceRegistration;
import io.steelyard.discovery.DiscoveryStats;
import io.steelyard.spring.GrpcServerRegistration;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;

/**
 * steelyard's meters, bound to every Boot {@code MeterRegistry} (Boot binds each {@link
 * MeterBinder} bean). The one place where the starter binds meters: when the agent, discovery and
 * balancer publish Micrometer meters of their own (issue #13), their binders are bound here too.
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><th>name</th><th>type</th><th>what</th></tr>
 *   <tr><td>steelyard.registration.weight</td><td>gauge</td><td>this instance's weight</td></tr>
 *   <tr><td>steelyard.registration.registered</td><td>gauge</td><td>1 while the key is in etcd, else 0</td></tr>
 *   <tr><td>steelyard.registration.registrations</td><td>counter</td><td>keys written on a new lease (first + recoveries)</td></tr>
 *   <tr><td>steelyard.discovery.watches</td><td>gauge</td><td>shared service watchers of the process</td></tr>
 *   <tr><td>steelyard.discovery.etcd.watches</td><td>gauge</td><td>etcd watch streams open</td></tr>
 *   <tr><td>steelyard.discovery.etcd.clients</td><td>gauge</td><td>jetcd clients of the watchers</td></tr>
 *   <tr><td>steelyard.discovery.stale.watches</td><td>gauge</td><td>watchers serving a stale list</td></tr>
 *   <tr><td>steelyard.discovery.staleness</td><td>time gauge</td><td>how long the stalest has been stale</td></tr>
 *   <tr><td>steelyard.discovery.malformed.values</td><td>counter</td><td>values skipped as unreadable</td></tr>
 * </table>
 *
 * <p>Registration meters carry the tag {@code service}; discovery meters describe the whole JVM
 * (the watch registry is shared by every channel of the process).
 */
public final class SteelyardMeterBinder implements MeterBinder {

  @Nullable private final GrpcServerRegistration registration;

  public SteelyardMeterBinder(@Nullable GrpcServerRegistration registration) {
    this.registration = registration;
  }

  @Override
  public void bindTo(MeterRegistry registry) {
    if (registration != null) {
      bindRegistration(registry, registration);
    }
    Gauge.builder("steelyard.discovery.watches", DiscoveryStats::activeWatches)
        .description("Shared etcd service watchers of this JVM")
        .register(registry);
    Gauge.builder("steelyard.discovery.etcd.watches", DiscoveryStats::openEtcdWatches)
        .description("etcd watch streams open")
        .register(registry);
    Gauge.builder("steelyard.discovery.etcd.clients", DiscoveryStats::etcdClients)
        .description("jetcd clients held by the discovery watchers")
        .register(registry);
    Gauge.builder("steelyard.discovery.stale.watches", DiscoveryStats::staleWatches)
        .description("Watchers serving their last known list because etcd is unreachable")
        .register(registry);
    TimeGauge.builder("steelyard.discovery.staleness", () -> DiscoveryStats.maxStaleness().toNanos(),
            TimeUnit.NANOSECONDS)
        .description("How long the stalest watcher has been stale")
        .register(registry);
    FunctionCounter.builder("steelyard.discovery.malformed.values", DiscoveryStats.class,
            c -> DiscoveryStats.malformedValues())
        .description("Registry values skipped because they could not be read")
        .register(registry);
  }

  private static void bindRegistration(MeterRegistry registry, GrpcServerRegistration r) {
    String service = r.service();
    Gauge.builder("steelyard.registration.weight", r,
            x -> x.registration().map(ServiceRegistration::weight).orElse(0))
        .description("Weight this instance registers with")
        .tag("service", service)
        .register(registry);
    Gauge.builder("steelyard.registration.registered", r,
            x -> x.state() == RegistrationState.REGISTERED ? 1 : 0)
        .description("1 while this instance's key is in etcd under a live lease")
        .tag("service", service)
        .register(registry);
    FunctionCounter.builder("steelyard.registration.registrations", r,
            GrpcServerRegistration::registrations)
        .description("Times the key was written on a new lease (the first registration and each recovery)")
        .tag("service", service)
        .register(registry);
  }
}
