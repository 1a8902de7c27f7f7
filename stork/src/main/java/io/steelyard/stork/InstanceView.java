package io.steelyard.stork;

import io.smallrye.stork.api.ServiceInstance;
import io.steelyard.balancer.spi.SlowStartWeights;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.annotation.concurrent.Immutable;

/**
 * One service as a {@link SteelyardServiceDiscovery} last saw it in etcd: the Stork instances
 * (drained ones included, sorted by address), with what the load balancer reads of each in
 * parallel arrays: the registered weight, the zone ({@code ""} for none) and when its slow-start
 * ramp began ({@link SlowStartWeights#NOT_RAMPING}: serving since before the first list, or
 * drained).
 *
 * <p>{@link #indexOf} finds an instance by host and port, so an instance handed back by a client
 * that cached an older list (Quarkus's gRPC client does) is judged by what etcd says now.
 */
@Immutable
final class InstanceView {

  /** Before etcd's first list. */
  static final InstanceView NONE =
      new InstanceView(List.of(), new int[0], new String[0], new long[0], false, 0);

  private final List<ServiceInstance> instances;
  private final int[] weights;
  private final String[] zones;
  private final long[] rampStartNanos;
  private final boolean listed;
  private final long revision;
  private final Map<ServiceInstance, Integer> index;

  InstanceView(
      List<ServiceInstance> instances, int[] weights, String[] zones, long[] rampStartNanos,
      boolean listed, long revision) {
    this.instances = Collections.unmodifiableList(instances);
    this.weights = weights;
    this.zones = zones;
    this.rampStartNanos = rampStartNanos;
    this.listed = listed;
    this.revision = revision;
    // Stork's DefaultServiceInstance is equal by host and port.
    Map<ServiceInstance, Integer> byAddress = new HashMap<>();
    for (int i = 0; i < instances.size(); i++) {
      byAddress.put(instances.get(i), i);
    }
    this.index = byAddress;
  }

  /** Every instance, drained ones included, sorted by address; the list Stork is handed. */
  List<ServiceInstance> instances() {
    return instances;
  }

  int size() {
    return weights.length;
  }

  int weight(int i) {
    return weights[i];
  }

  String zone(int i) {
    return zones[i];
  }

  long rampStartNanos(int i) {
    return rampStartNanos[i];
  }

  /** Whether etcd's first list has arrived. */
  boolean listed() {
    return listed;
  }

  /** The etcd revision this view reflects. */
  long revision() {
    return revision;
  }

  /** The index of the instance at {@code instance}'s host and port, or -1 when etcd has none there. */
  int indexOf(ServiceInstance instance) {
    Integer i = index.get(instance);
    return i == null ? -1 : i;
  }
}
