package io.steelyard.registry;

import io.etcd.jetcd.ByteSequence;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import javax.annotation.Nullable;

/**
 * The etcd key layout: {@code <prefix>/<service>/<instance>}, where the instance part is the
 * address for keys steelyard writes. The prefix used for listing and watching a service always
 * ends with {@code /}, so {@code greeter} never matches {@code greeter2}.
 *
 * <pre>{@code
 * KeyLayout keys = KeyLayout.defaults();              // prefix "/services"
 * keys.servicePrefix("greeter");                      // "/services/greeter/"
 * keys.instanceKey("greeter", "10.0.0.7:50051");      // "/services/greeter/10.0.0.7:50051"
 * keys.drainNoteKey("greeter", "10.0.0.7:50051");     // "/services/.drained/greeter/10.0.0.7:50051"
 * keys.serviceConfigKey("greeter");                   // "/services/.config/greeter"
 *
 * keys.parse("/services/greeter/10.0.0.7:50051");     // InstanceKey[greeter, 10.0.0.7:50051]
 * keys.serviceOf("/services/greeter/10.0.0.7:50051"); // Optional[greeter]
 * keys.serviceOf("/services/.drained/greeter/h:1");   // Optional.empty: not an instance key
 * keys.parseDrainNote("/services/.drained/greeter/h:1"); // InstanceKey[greeter, h:1]
 * }</pre>
 *
 * <p>The drain notes ({@link #drainNoteKey}) live under {@code <prefix>/.drained/}: {@code
 * .drained} can never be a service name (a name starts with a letter or digit), so no listing of a
 * service's prefix ever sees them. The service configs ({@link #serviceConfigKey}) live under
 * {@code <prefix>/.config/} for the same reason: clients that list {@code <prefix>/<service>/}
 * (Go's {@code addr|weight} clients among them) never see them.
 *
 * <p>Every method validates its service name and address first, so a bad name can never reach
 * another service's keys. Immutable and thread-safe.
 */
public final class KeyLayout {

  /** The default key prefix, {@value}. */
  public static final String DEFAULT_PREFIX = "/services";

  /** The segment under the prefix that holds the drain notes. */
  private static final String DRAIN_NOTES = "/.drained/";

  /** The segment under the prefix that holds the service configs. */
  private static final String SERVICE_CONFIGS = "/.config/";

  private static final KeyLayout DEFAULTS = new KeyLayout(DEFAULT_PREFIX);

  private final String prefix;

  private KeyLayout(String prefix) {
    this.prefix = prefix;
  }

  /** The layout under {@value #DEFAULT_PREFIX}. */
  public static KeyLayout defaults() {
    return DEFAULTS;
  }

  /** The layout under {@code prefix}; see {@link Validation#checkPrefix} for what is accepted. */
  public static KeyLayout of(String prefix) {
    return new KeyLayout(Validation.checkPrefix(prefix));
  }

  /** The normalised prefix, without a trailing slash. */
  public String prefix() {
    return prefix;
  }

  /** {@code <prefix>/<service>/}: the key prefix to list and watch for one service. */
  public String servicePrefix(String service) {
    Validation.checkServiceName(service);
    return prefix + "/" + service + "/";
  }

  /** {@code <prefix>/<service>/<address>}: the key of one instance. */
  public String instanceKey(String service, String address) {
    Validation.checkAddress(address);
    return servicePrefix(service) + address;
  }

  /**
   * {@code <prefix>/.drained/<service>/}: the prefix of {@code service}'s drain notes, one per
   * drained instance, named by the instance part of its key.
   */
  public String drainNotePrefix(String service) {
    Validation.checkServiceName(service);
    return prefix + DRAIN_NOTES + service + "/";
  }

  /**
   * {@code <prefix>/.drained/<service>/<address>}: the drain note of one instance. {@code drain}
   * writes the weight it replaced there, on the instance's lease (so the note expires with the
   * instance); {@code undrain} restores it, and any other write of the weight removes it.
   */
  public String drainNoteKey(String service, String address) {
    Validation.checkAddress(address);
    return drainNotePrefix(service) + address;
  }

  /**
   * The drain note of the instance {@code instance} names, whatever its instance part: keys
   * written by other tools need not end in an address, and their notes are named by the same
   * part. The inverse of {@link #parseDrainNote}.
   *
   * @throws IllegalArgumentException when the service is not a valid name or the instance part is
   *     empty
   */
  public String drainNoteKey(InstanceKey instance) {
    if (instance.instanceId().isEmpty()) {
      throw new IllegalArgumentException("instanceId: empty (expected: the part of the key after "
          + servicePrefix(instance.service()) + ")");
    }
    return drainNotePrefix(instance.service()) + instance.instanceId();
  }

  /**
   * {@code <prefix>/.config/<service>}: the gRPC service config operators set for {@code
   * service}'s clients (JSON, e.g. {@code {"loadBalancingConfig":[{"weighted_least_request":{}}]}}),
   * which the {@code etcd:} resolver hands to every channel of the service.
   */
  public String serviceConfigKey(String service) {
    Validation.checkServiceName(service);
    return prefix + SERVICE_CONFIGS + service;
  }

  /**
   * {@code <prefix>/}: the key prefix to list and watch every service at once. Besides the
   * instance keys it covers the drain notes and service configs; {@link #parse} tells them apart.
   */
  public String registryPrefix() {
    return prefix + "/";
  }

  /**
   * A key of one instance, split into its parts: the inverse of {@link #instanceKey}.
   *
   * @param service a valid service name ({@link Validation#checkServiceName})
   * @param instanceId the non-empty part after the service's prefix (the address, for keys
   *     steelyard writes)
   */
  public record InstanceKey(String service, String instanceId) {}

  /**
   * The service and instance id of {@code key} when it is an instance key of this layout ({@code
   * <prefix>/<service>/<instance>}), else empty: a key outside the prefix, a drain note or a
   * service config (their segments are not service names), a key with no or an empty instance
   * part, or a service segment that is not a valid name. The instance part is taken as {@link
   * #instanceId} takes it, so {@code parse(instanceKey(s, a))} gives back {@code (s, a)}.
   */
  public Optional<InstanceKey> parse(@Nullable String key) {
    return split(key, registryPrefix());
  }

  /**
   * The service and instance id a drain note of this layout ({@code
   * <prefix>/.drained/<service>/<instance>}) belongs to, else empty: the inverse of {@link
   * #drainNoteKey}, so {@code parseDrainNote(drainNoteKey(s, a))} gives back {@code (s, a)}. Any
   * other key (an instance key, a service config, a note with no instance part or a bad service
   * segment) is empty.
   */
  public Optional<InstanceKey> parseDrainNote(@Nullable String key) {
    return split(key, prefix + DRAIN_NOTES);
  }

  /** {@code <root><service>/<instance>} split into its parts, when the service is a valid name. */
  private static Optional<InstanceKey> split(@Nullable String key, String root) {
    if (key == null || !key.startsWith(root)) {
      return Optional.empty();
    }
    int end = key.indexOf('/', root.length());
    if (end < 0 || end == key.length() - 1) {
      return Optional.empty();
    }
    String service = key.substring(root.length(), end);
    if (!Validation.isValidServiceName(service)) {
      return Optional.empty();
    }
    return Optional.of(new InstanceKey(service, key.substring(end + 1)));
  }

  /**
   * Whether {@code key} lies under a segment the registry keeps for itself, {@code <prefix>/.}
   * (the drain notes and the service configs): never a service's, and never malformed either.
   */
  public boolean isReserved(@Nullable String key) {
    return key != null && key.startsWith(prefix + "/.");
  }

  /** The service of {@code key} when it is an instance key of this layout; see {@link #parse}. */
  public Optional<String> serviceOf(@Nullable String key) {
    return parse(key).map(InstanceKey::service);
  }

  /** {@link #servicePrefix} as bytes for jetcd. */
  public ByteSequence servicePrefixBytes(String service) {
    return ByteSequence.from(servicePrefix(service), StandardCharsets.UTF_8);
  }

  /** {@link #instanceKey} as bytes for jetcd. */
  public ByteSequence instanceKeyBytes(String service, String address) {
    return ByteSequence.from(instanceKey(service, address), StandardCharsets.UTF_8);
  }

  /**
   * The instance part of {@code key} when it lies directly under {@code service}'s prefix, else
   * empty. Keys written by other tools (Go's endpoints manager lets callers pick any suffix) are
   * accepted as long as the suffix is non-empty.
   */
  public Optional<String> instanceId(String service, String key) {
    String p = servicePrefix(service);
    if (key == null || !key.startsWith(p) || key.length() == p.length()) {
      return Optional.empty();
    }
    return Optional.of(key.substring(p.length()));
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof KeyLayout other && other.prefix.equals(prefix);
  }

  @Override
  public int hashCode() {
    return prefix.hashCode();
  }

  @Override
  public String toString() {
    return "KeyLayout{" + prefix + "}";
  }
}
