package io.steelyard.registry.admin;

import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.RegistryException;

/**
 * One key under a service's prefix as etcd holds it now.
 *
 * @param service the service name
 * @param key the full etcd key
 * @param instanceId the part of the key after the service prefix (the address, for keys
 *     steelyard writes)
 * @param value the decoded value: {@link DecodedValue.Accepted} or {@link DecodedValue.Rejected}
 * @param leaseId the key's lease, {@code 0} if it has none
 * @param modRevision the key's mod revision, the guard for updates
 * @param ttlSeconds seconds left on the lease; {@code -1} when not asked for, no lease, or expired
 * @param drainedFromWeight the weight before {@code drain}, or {@code -1} when unknown
 */
public record RegisteredInstance(
    String service,
    String key,
    String instanceId,
    DecodedValue value,
    long leaseId,
    long modRevision,
    long ttlSeconds,
    int drainedFromWeight) {

  /** Whether the value was understood. */
  public boolean accepted() {
    return value instanceof DecodedValue.Accepted;
  }

  /** The decoded value, or throws {@link RegistryException} (MALFORMED) naming the reason. */
  public DecodedValue.Accepted acceptedOrThrow() {
    if (value instanceof DecodedValue.Accepted a) {
      return a;
    }
    throw new RegistryException(
        RegistryException.Kind.MALFORMED,
        key + ": unreadable value (" + ((DecodedValue.Rejected) value).reason() + ")",
        null);
  }
}
