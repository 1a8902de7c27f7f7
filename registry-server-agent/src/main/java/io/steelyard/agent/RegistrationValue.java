package io.steelyard.agent;

import io.steelyard.registry.ServiceInstance;
import io.steelyard.registry.ValueCodec;
import io.steelyard.registry.ValueFormat;
import java.util.Map;

/**
 * What a registration's key holds for a weight: the instance (service, address, metadata) in the
 * registration's value format, encoded through {@link ValueCodec}. Immutable.
 */
record RegistrationValue(
    String service, String address, Map<String, String> metadata, ValueFormat format) {

  RegistrationValue {
    metadata = Map.copyOf(metadata);
  }

  /** The key's bytes with weight {@code w}. */
  byte[] encode(int w) {
    return ValueCodec.encode(new ServiceInstance(service, address, w, metadata), format.forWeight(w));
  }
}
