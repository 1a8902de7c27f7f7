package io.steelyard.registry;

import static java.util.Objects.requireNonNull;

import com.google.common.collect.ImmutableSortedMap;
import java.util.Map;

/**
 * One registered instance of a service: where to dial it, its weight, and free-form metadata
 * (zone, version, ...). Immutable; validated on construction.
 *
 * <pre>{@code
 * ServiceInstance i = ServiceInstance.of("greeter", "10.0.0.7:50051", 5);
 * }</pre>
 *
 * @param service the service name (see {@link Validation#checkServiceName})
 * @param address {@code host:port} or {@code [ipv6]:port}
 * @param weight {@code 0..}{@value Validation#MAX_WEIGHT}; 0 means drained
 * @param metadata metadata other than the weight, sorted by key; travels only in the JSON format
 */
public record ServiceInstance(
    String service, String address, int weight, Map<String, String> metadata) {

  public ServiceInstance {
    Validation.checkServiceName(service);
    Validation.checkAddress(address);
    Validation.checkWeight(weight);
    requireNonNull(metadata, "metadata");
    if (metadata.containsKey(ValueCodec.WEIGHT_METADATA_KEY)) {
      throw new IllegalArgumentException(
          "metadata: contains '" + ValueCodec.WEIGHT_METADATA_KEY
              + "' (expected: the weight is its own field)");
    }
    metadata = ImmutableSortedMap.copyOf(metadata);
  }

  /** An instance without metadata. */
  public static ServiceInstance of(String service, String address, int weight) {
    return new ServiceInstance(service, address, weight, Map.of());
  }

  /** A copy with another weight. */
  public ServiceInstance withWeight(int newWeight) {
    return new ServiceInstance(service, address, newWeight, metadata);
  }
}
