package io.steelyard.spring.cloud;

import static java.util.Objects.requireNonNull;

import java.util.List;
import org.springframework.cloud.client.ServiceInstance;
import org.springframework.cloud.client.discovery.DiscoveryClient;

/**
 * Spring Cloud's {@link DiscoveryClient} over the steelyard registry. The first lookup of a
 * service starts a watch on its prefix and waits (up to {@code
 * steelyard.cloud.discovery.first-list-timeout}) for etcd's first list; later lookups answer from
 * memory, kept current by the watch. Each instance is a {@link SteelyardServiceInstance} (host,
 * port, metadata with {@code weight}), drained ones (weight 0) included.
 *
 * <pre>{@code
 * List<ServiceInstance> greeters = discoveryClient.getInstances("greeter");
 * }</pre>
 */
final class SteelyardDiscoveryClient implements DiscoveryClient {

  private final WatchedServices watched;

  SteelyardDiscoveryClient(WatchedServices watched) {
    this.watched = requireNonNull(watched, "watched");
  }

  @Override
  public String description() {
    return "steelyard (etcd)";
  }

  @Override
  public List<ServiceInstance> getInstances(String serviceId) {
    return watched.view(serviceId)
        .map(v -> v.awaitInstances(watched.firstListTimeout()))
        .orElse(List.of());
  }

  @Override
  public List<String> getServices() {
    return watched.services();
  }
}
