package io.steelyard.registry.admin;

import static java.util.Objects.requireNonNull;

import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.Validation;
import java.util.OptionalInt;
import java.util.OptionalLong;
import javax.annotation.Nullable;

/**
 * An operator's write to one registered instance: set its weight, drain it, undrain it, or
 * deregister it. Every tool that changes an instance for an operator (the {@code steelyard} CLI,
 * the Spring Boot actuator endpoint, a console) builds its write here and carries it out with
 * {@link InstanceStore#apply}, so the input is checked by one rule and the outcome told in one
 * sentence everywhere.
 *
 * <pre>{@code
 * InstanceWrite write = InstanceWrite.setWeight("greeter", "10.0.0.7:50051", 8); // checks the input
 * InstanceWrite.Result r = store.apply(write);                                   // etcd
 * log.info(r.message());                                  // "10.0.0.7:50051 weight 5 -> 8"
 * }</pre>
 *
 * <p>The factories throw {@link IllegalArgumentException} for a bad service name, address or
 * weight, with a one-line message naming the value and what was expected ({@code "weight: 1000001
 * (expected: 0..1000000)"}), before anything reaches etcd: a CLI maps it to a usage error, an
 * HTTP endpoint to 400. Immutable and thread-safe.
 */
public final class InstanceWrite {

  /** What the write does. */
  public enum Kind {
    /** Sets the weight ({@code 0..1000000}), keeping lease and format; ends a drain. */
    SET_WEIGHT,
    /** Sets the weight to 0 and remembers the weight it replaced; a drained instance stays. */
    DRAIN,
    /**
     * Restores the given weight, else the one remembered by a drain, else {@value
     * Validation#DEFAULT_WEIGHT}; without a weight, an instance that is not drained stays.
     */
    UNDRAIN,
    /** Deletes the instance's key and its drain note; the lease is left alone. */
    DEREGISTER
  }

  private final Kind kind;
  private final String service;
  private final String address;
  private final OptionalInt weight;

  private InstanceWrite(Kind kind, String service, String address, OptionalInt weight) {
    this.kind = kind;
    this.service = service;
    this.address = address;
    this.weight = weight;
  }

  /** Checks service, address and weight, in that order. */
  private static InstanceWrite checked(
      Kind kind, String service, String address, OptionalLong weight) {
    Validation.checkServiceName(service);
    Validation.checkAddress(address);
    OptionalInt w =
        weight.isEmpty() ? OptionalInt.empty() : OptionalInt.of(Validation.checkWeight(weight.getAsLong()));
    return new InstanceWrite(kind, service, address, w);
  }

  /** Sets the weight of {@code service}'s instance at {@code address} to {@code weight}. */
  public static InstanceWrite setWeight(String service, String address, long weight) {
    return checked(Kind.SET_WEIGHT, service, address, OptionalLong.of(weight));
  }

  /** Drains the instance: weight 0, remembering the weight it had. */
  public static InstanceWrite drain(String service, String address) {
    return checked(Kind.DRAIN, service, address, OptionalLong.empty());
  }

  /** Gives a drained instance the weight it had before the drain (else 1) back. */
  public static InstanceWrite undrain(String service, String address) {
    return checked(Kind.UNDRAIN, service, address, OptionalLong.empty());
  }

  /** Gives the instance {@code weight}, drained or not. */
  public static InstanceWrite undrain(String service, String address, long weight) {
    return checked(Kind.UNDRAIN, service, address, OptionalLong.of(weight));
  }

  /** Deletes the instance's key (and its drain note). */
  public static InstanceWrite deregister(String service, String address) {
    return checked(Kind.DEREGISTER, service, address, OptionalLong.empty());
  }

  public Kind kind() {
    return kind;
  }

  public String service() {
    return service;
  }

  public String address() {
    return address;
  }

  /** The weight to write: always present for SET_WEIGHT, optional for UNDRAIN, else empty. */
  public OptionalInt weight() {
    return weight;
  }

  @Override
  public String toString() {
    return kind.name().toLowerCase(java.util.Locale.ROOT) + " " + service + " " + address
        + (weight.isPresent() ? " " + weight.getAsInt() : "");
  }

  /**
   * What a write did: the instance as read before it ({@code null} for DEREGISTER, which does not
   * read), as etcd holds it after ({@code null} for DEREGISTER), and {@link #message()}, the
   * sentence every tool prints.
   *
   * @param write the write carried out
   * @param key the instance's etcd key
   * @param before the instance as read before the write; {@code null} for DEREGISTER
   * @param after the instance after the write (the one read when nothing changed); {@code null}
   *     for DEREGISTER
   */
  public record Result(
      InstanceWrite write, String key, @Nullable RegisteredInstance before,
      @Nullable RegisteredInstance after) {

    public Result {
      requireNonNull(write, "write");
      requireNonNull(key, "key");
    }

    /**
     * One line saying what happened, e.g. {@code "10.0.0.7:50051 weight 5 -> 8"}, {@code
     * "10.0.0.7:50051 drained: weight 5 -> 0 (undrain restores 5)"}, {@code "10.0.0.7:50051 is
     * not drained (weight 8); nothing changed"} or {@code "deleted /services/greeter/10.0.0.7:50051"}.
     */
    public String message() {
      String address = write.address;
      if (write.kind == Kind.DEREGISTER || before == null || after == null) {
        return "deleted " + key;
      }
      int old = weightOf(before);
      int now = weightOf(after);
      return switch (write.kind) {
        case SET_WEIGHT -> address + " weight " + old + " -> " + now;
        case DRAIN -> {
          int restores = after.drainedFromWeight();
          if (old != 0 && restores >= 0) {
            yield address + " drained: weight " + restores + " -> 0 (undrain restores " + restores + ")";
          }
          yield address + " was already drained (weight 0"
              + (restores >= 0 ? "; undrain restores " + restores : "") + ")";
        }
        case UNDRAIN -> old != 0 && write.weight.isEmpty()
            ? address + " is not drained (weight " + old + "); nothing changed"
            : address + " weight " + old + " -> " + now;
        case DEREGISTER -> "deleted " + key;
      };
    }

    private static int weightOf(RegisteredInstance i) {
      return i.value() instanceof DecodedValue.Accepted a ? a.weight() : -1;
    }
  }
}
