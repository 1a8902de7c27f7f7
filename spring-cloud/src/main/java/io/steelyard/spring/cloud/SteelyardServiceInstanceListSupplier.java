package io.steelyard.spring.cloud;

import static java.util.Objects.requireNonNull;

import java.util.List;
import org.springframework.cloud.client.ServiceInstance;
import org.springframework.cloud.loadbalancer.core.ServiceInstanceListSupplier;
import reactor.core.publisher.Flux;

/**
 * Spring Cloud LoadBalancer's instance supplier for one service, live from the registry: the
 * current list, then each new one as etcd's watch delivers it (no cache to expire, no poll). The
 * lists carry drained instances too, each a {@link SteelyardServiceInstance} with its weight;
 * {@link SteelyardLoadBalancer} leaves the drained ones out.
 */
final class SteelyardServiceInstanceListSupplier implements ServiceInstanceListSupplier {

  private final ServiceView view;

  SteelyardServiceInstanceListSupplier(ServiceView view) {
    this.view = requireNonNull(view, "view");
  }

  @Override
  public String getServiceId() {
    return view.service();
  }

  @Override
  public Flux<List<ServiceInstance>> get() {
    return view.lists();
  }

  /** The service's view: what {@link SteelyardLoadBalancer} picks from directly. */
  ServiceView view() {
    return view;
  }
}
