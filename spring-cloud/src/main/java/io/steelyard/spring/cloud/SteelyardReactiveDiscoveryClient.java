package io.steelyard.spring.cloud;

import static java.util.Objects.requireNonNull;

import org.springframework.cloud.client.ServiceInstance;
import org.springframework.cloud.client.discovery.ReactiveDiscoveryClient;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

/**
 * Spring Cloud's {@link ReactiveDiscoveryClient} over the same watches as {@link
 * SteelyardDiscoveryClient}: {@link #getInstances} completes when etcd's first list of the
 * service has arrived (never blocking a reactive thread), then answers from memory.
 */
final class SteelyardReactiveDiscoveryClient implements ReactiveDiscoveryClient {

  private final WatchedServices watched;

  SteelyardReactiveDiscoveryClient(WatchedServices watched) {
    this.watched = requireNonNull(watched, "watched");
  }

  @Override
  public String description() {
    return "steelyard (etcd), reactive";
  }

  @Override
  public Flux<ServiceInstance> getInstances(String serviceId) {
    return Mono.justOrEmpty(watched.view(serviceId))
        .flatMap(v -> v.firstInstances().timeout(watched.firstListTimeout(), Mono.fromSupplier(v::instances)))
        .flatMapIterable(list -> list);
  }

  @Override
  public Flux<String> getServices() {
    return Mono.fromCallable(watched::services)
        .subscribeOn(Schedulers.boundedElastic())
        .flatMapIterable(list -> list);
  }
}
