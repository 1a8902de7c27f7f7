package io.steelyard.registry;

import io.grpc.Attributes;
import io.grpc.EquivalentAddressGroup;
import java.util.HashMap;
import java.util.Map;
import javax.annotation.Nullable;

/**
 * Where an instance runs, and where a caller runs: the two metadata keys an instance declares its
 * place with ({@value #REGION_KEY}, {@value #ZONE_KEY}, in the JSON value's {@code Metadata}), and
 * the resolution attribute that tells a balancer the caller's own zone. The agent, the CLI, the
 * xDS server and the zone-aware balancers all read the keys from here, so an instance declares
 * its place once for every path ({@code docs/localities.md}).
 *
 * <pre>{@code
 * String zone = Localities.zone(eag);   // "" when the instance declared none
 * }</pre>
 */
public final class Localities {

  /** Metadata key of the region: a geographical area of zones, e.g. {@code eu-west-1}. */
  public static final String REGION_KEY = "region";

  /** Metadata key of the zone: a failure domain inside a region, e.g. {@code eu-west-1a}. */
  public static final String ZONE_KEY = "zone";

  /**
   * The caller's own zone, set by a resolver on its {@code ResolutionResult} attributes (the etcd
   * resolver from the target's {@code ?zone=} or {@code STEELYARD_ZONE}); absent: the caller's
   * zone is unknown and balancing is zone-blind.
   */
  @io.grpc.NameResolver.ResolutionResultAttr
  public static final Attributes.Key<String> CALLER_ZONE =
      Attributes.Key.create("io.steelyard.callerZone");

  /** The environment variable a process states its zone in, read once at startup. */
  public static final String ZONE_ENV = "STEELYARD_ZONE";

  private Localities() {}

  /** The zone {@code eag}'s metadata declares, or {@code ""} (the empty zone) when none. */
  public static String zone(EquivalentAddressGroup eag) {
    return orEmpty(EndpointWeights.metadata(eag).get(ZONE_KEY));
  }

  /** The region {@code eag}'s metadata declares, or {@code ""} when none. */
  public static String region(EquivalentAddressGroup eag) {
    return orEmpty(EndpointWeights.metadata(eag).get(REGION_KEY));
  }

  /** The zone in {@code metadata}, or {@code ""}. */
  public static String zone(Map<String, String> metadata) {
    return orEmpty(metadata.get(ZONE_KEY));
  }

  /** The region in {@code metadata}, or {@code ""}. */
  public static String region(Map<String, String> metadata) {
    return orEmpty(metadata.get(REGION_KEY));
  }

  /**
   * A zone or region name as given on a command line, a builder or a target: non-empty, at most
   * 128 characters of {@code [A-Za-z0-9._-]}.
   *
   * @throws IllegalArgumentException naming {@code what} and the value
   */
  public static String checkName(String what, @Nullable String value) {
    if (value == null || !value.matches("[A-Za-z0-9._-]{1,128}")) {
      throw new IllegalArgumentException(
          what + ": " + (value == null ? "null" : Validation.quote(value))
              + " (expected: 1..128 characters of A-Z a-z 0-9 . _ -, e.g. eu-west-1a)");
    }
    return value;
  }

  /**
   * {@code metadata} with {@code zone} and {@code region} (each null for none) added under {@link
   * #ZONE_KEY} and {@link #REGION_KEY}, each checked with {@link #checkName}; a key the metadata
   * already holds with another value is refused.
   *
   * @throws IllegalArgumentException naming the key and both values
   */
  public static Map<String, String> withLocality(
      Map<String, String> metadata, @Nullable String zone, @Nullable String region) {
    if (zone == null && region == null) {
      return Map.copyOf(metadata);
    }
    Map<String, String> all = new HashMap<>(metadata);
    for (String[] kv : new String[][] {{ZONE_KEY, zone}, {REGION_KEY, region}}) {
      if (kv[1] == null) {
        continue;
      }
      checkName(kv[0], kv[1]);
      String before = all.putIfAbsent(kv[0], kv[1]);
      if (before != null && !before.equals(kv[1])) {
        throw new IllegalArgumentException(kv[0] + ": " + Validation.quote(kv[1]) + " but the metadata's "
            + kv[0] + " is " + Validation.quote(before) + " (expected: one of them)");
      }
    }
    return Map.copyOf(all);
  }

  private static String orEmpty(@Nullable String s) {
    return s == null ? "" : s;
  }
}
