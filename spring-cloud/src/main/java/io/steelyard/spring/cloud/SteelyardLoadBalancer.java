package io.steelyard.spring.cloud;

import static java.util.Objects.requireNonNull;

import io.steelyard.balancer.spi.EffectiveWeights;
import io.steelyard.registry.Validation;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import javax.annotation.Nullable;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.cloud.client.ServiceInstance;
import org.springframework.cloud.client.loadbalancer.Request;
import org.springframework.cloud.client.loadbalancer.Response;
import org.springframework.cloud.loadbalancer.core.NoopServiceInstanceListSupplier;
import org.springframework.cloud.loadbalancer.core.ReactorServiceInstanceLoadBalancer;
import org.springframework.cloud.loadbalancer.core.ServiceInstanceListSupplier;
import reactor.core.publisher.Mono;

/**
 * Spring Cloud LoadBalancer's choice by weight: instance {@code i} with probability {@code
 * weight[i] / sum(weight)}, drained instances (weight 0) never while another has a positive
 * weight, and new or undrained instances ramping up when slow start is configured ({@code
 * steelyard.cloud.loadbalancer.slow-start.*}).
 *
 * <p><b>Cost.</b> Over {@link SteelyardServiceInstanceListSupplier}, the configured supplier, a
 * choice is O(1) and allocates nothing: an alias table over the current list, built once per
 * change, and the {@code Mono<Response>} of each instance built with it. Over another supplier
 * (an application's own chain), the table is built once per list that supplier emits, and a
 * choice costs what that supplier's {@code Flux} costs.
 *
 * <p>Threading: thread-safe, lock-free.
 */
final class SteelyardLoadBalancer implements ReactorServiceInstanceLoadBalancer {

  private final String serviceId;
  private final ObjectProvider<ServiceInstanceListSupplier> suppliers;

  /** The supplier, looked up once: a lookup per call would cost a bean resolution each time. */
  @Nullable private volatile ServiceInstanceListSupplier supplier;

  /** The picker of the last list a foreign supplier emitted, with that list. */
  private volatile Cached cached = new Cached(List.of(), InstancePicker.empty());

  private record Cached(List<ServiceInstance> list, InstancePicker picker) {}

  SteelyardLoadBalancer(String serviceId, ObjectProvider<ServiceInstanceListSupplier> suppliers) {
    this.serviceId = requireNonNull(serviceId, "serviceId");
    this.suppliers = requireNonNull(suppliers, "suppliers");
  }

  @Override
  public Mono<Response<ServiceInstance>> choose(Request request) {
    ServiceInstanceListSupplier supplier = this.supplier;
    if (supplier == null) {
      supplier = suppliers.getIfAvailable(NoopServiceInstanceListSupplier::new);
      this.supplier = supplier;
    }
    if (supplier instanceof SteelyardServiceInstanceListSupplier own) {
      ServiceView view = own.view();
      if (view.listed()) {
        return view.picker().pick(ThreadLocalRandom.current().nextLong());
      }
      // Before etcd's first list: wait for it, as Spring's own balancers wait for their supplier.
      return view.firstInstances()
          .then(Mono.defer(() -> view.picker().pick(ThreadLocalRandom.current().nextLong())));
    }
    return supplier.get(request).next()
        .flatMap(list -> pickerFor(list).pick(ThreadLocalRandom.current().nextLong()));
  }

  private InstancePicker pickerFor(List<ServiceInstance> list) {
    Cached c = cached;
    if (c.list != list) {
      int[] weights = new int[list.size()];
      for (int i = 0; i < weights.length; i++) {
        weights[i] = weightOf(list.get(i));
      }
      c = new Cached(list, InstancePicker.of(list, EffectiveWeights.of(weights), new long[0], null, 0));
      cached = c;
    }
    return c.picker;
  }

  /**
   * The weight of an instance from any supplier: ours, else metadata {@code weight}, else the
   * registry's default weight.
   */
  static int weightOf(ServiceInstance instance) {
    if (instance instanceof SteelyardServiceInstance own) {
      return own.getWeight();
    }
    String w = instance.getMetadata() == null ? null
        : instance.getMetadata().get(SteelyardServiceInstance.WEIGHT_METADATA_KEY);
    if (w != null) {
      try {
        int weight = Integer.parseInt(w.trim());
        if (weight >= 0 && weight <= Validation.MAX_WEIGHT) {
          return weight;
        }
      } catch (NumberFormatException e) {
        // An unreadable weight counts as the default, as the balancer's missing attribute does.
      }
    }
    return Validation.DEFAULT_WEIGHT;
  }

  @Override
  public String toString() {
    return "SteelyardLoadBalancer{" + serviceId + "}";
  }
}
