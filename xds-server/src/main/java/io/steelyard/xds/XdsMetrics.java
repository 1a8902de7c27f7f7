package io.steelyard.xds;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * The control plane's meters, all under {@code steelyard.xds}:
 *
 * <ul>
 *   <li>{@code steelyard.xds.clients}: ADS streams open now;
 *   <li>{@code steelyard.xds.pushes}{type}: responses sent, by resource type (LDS, CDS, EDS; RDS only
 *       to a client that asks for routes, which are inline in each Listener);
 *   <li>{@code steelyard.xds.nacks}{type}: responses clients rejected;
 *   <li>{@code steelyard.xds.revision}: the newest etcd revision the served resources reflect;
 *   <li>{@code steelyard.xds.staleness.seconds}: how long the served view has gone without etcd
 *       (zero while etcd answers);
 *   <li>{@code steelyard.xds.services}: services served;
 *   <li>{@code steelyard.xds.refusals}{bound}: streams and connections refused, by the bound
 *       they hit ({@code streams}, {@code names}), at the TLS handshake ({@code handshake}), or
 *       for a client certificate without a name under grants ({@code identity});
 *   <li>{@code steelyard.xds.denied}: resources withheld from clients their grants do not name;
 *   <li>{@code steelyard.xds.configs.refused}: stored service configs refused (the last good one
 *       stays), each revision counted once;
 *   <li>{@code steelyard.xds.configs.unmapped}: stored service configs served without a part xDS
 *       has no form for, each revision counted once.
 * </ul>
 */
final class XdsMetrics {

  private final MeterRegistry registry;
  private final AtomicInteger clients = new AtomicInteger();

  XdsMetrics(MeterRegistry registry, XdsPublisher publisher) {
    this.registry = registry;
    Gauge.builder("steelyard.xds.clients", clients, AtomicInteger::get)
        .description("ADS streams open now")
        .register(registry);
    gauge("steelyard.xds.revision", "Newest etcd revision the served resources reflect", () -> {
      XdsSnapshot s = publisher.current();
      return s == null ? 0 : s.revision();
    });
    gauge("steelyard.xds.staleness.seconds", "How long the served view has gone without etcd",
        () -> publisher.staleness().toMillis() / 1000.0);
    FunctionCounter.builder("steelyard.xds.configs.refused", publisher, XdsPublisher::refusedConfigs)
        .description("Stored service configs refused, the last good one staying in force").register(registry);
    FunctionCounter.builder("steelyard.xds.configs.unmapped", publisher, XdsPublisher::partlyMappedConfigs)
        .description("Stored service configs served without a part xDS has no form for").register(registry);
    gauge("steelyard.xds.services", "Services served", () -> {
      XdsSnapshot s = publisher.current();
      return s == null ? 0 : s.services().size();
    });
  }

  private void gauge(String name, String description, Supplier<Number> value) {
    Gauge.builder(name, value).description(description).register(registry);
  }

  void streamOpened() {
    clients.incrementAndGet();
  }

  void streamClosed() {
    clients.decrementAndGet();
  }

  int clients() {
    return clients.get();
  }

  void pushed(String type) {
    Counter.builder("steelyard.xds.pushes").tag("type", type).description("xDS responses sent")
        .register(registry).increment();
  }

  void nacked(String type) {
    Counter.builder("steelyard.xds.nacks").tag("type", type).description("xDS responses rejected by clients")
        .register(registry).increment();
  }

  double nacks() {
    return registry.find("steelyard.xds.nacks").counters().stream().mapToDouble(Counter::count).sum();
  }

  void refused(String bound) {
    Counter.builder("steelyard.xds.refusals").tag("bound", bound)
        .description("xDS streams and TLS handshakes refused").register(registry).increment();
  }

  void denied(int resources) {
    Counter.builder("steelyard.xds.denied").description("xDS resources withheld from clients outside their grants")
        .register(registry).increment(resources);
  }

  double refusals(String bound) {
    Counter c = registry.find("steelyard.xds.refusals").tag("bound", bound).counter();
    return c == null ? 0 : c.count();
  }

  double denied() {
    Counter c = registry.find("steelyard.xds.denied").counter();
    return c == null ? 0 : c.count();
  }
}
