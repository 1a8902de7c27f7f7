package io.steelyard.registry;

import static java.util.Objects.requireNonNull;

import com.google.common.collect.ImmutableSortedMap;
import java.util.Map;

/**
 * The outcome of reading one etcd value: {@link Accepted} or {@link Rejected}. Decoding never
 * throws; a caller on the watch path skips a rejected value, warns once and counts it.
 */
public sealed interface DecodedValue permits DecodedValue.Accepted, DecodedValue.Rejected {

  /**
   * A value we understood.
   *
   * @param address where to dial the instance (from the value, not the key)
   * @param weight {@code 0..}{@value Validation#MAX_WEIGHT}
   * @param metadata metadata other than the weight, sorted by key
   * @param format the format it was written in, kept by weight updates
   */
  record Accepted(String address, int weight, Map<String, String> metadata, ValueFormat format)
      implements DecodedValue {
    public Accepted {
      Validation.checkAddress(address);
      Validation.checkWeight(weight);
      requireNonNull(format, "format");
      metadata = ImmutableSortedMap.copyOf(metadata);
    }

    /** This value as an instance of {@code service}. */
    public ServiceInstance toInstance(String service) {
      return new ServiceInstance(service, address, weight, metadata);
    }
  }

  /**
   * A value we refused, and why (one line, safe to log: input is quoted and truncated).
   *
   * @param reason e.g. {@code "pipe value: weight 'abc' is not an integer"}
   */
  record Rejected(String reason) implements DecodedValue {
    public Rejected {
      requireNonNull(reason, "reason");
    }
  }
}
