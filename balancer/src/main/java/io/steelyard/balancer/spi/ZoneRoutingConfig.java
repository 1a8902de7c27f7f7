package io.steelyard.balancer.spi;

import static com.google.common.base.Preconditions.checkArgument;

import com.google.common.collect.ImmutableSortedSet;
import io.steelyard.registry.Localities;
import java.util.Objects;
import java.util.Set;
import javax.annotation.Nullable;
import javax.annotation.concurrent.Immutable;

/**
 * The {@code zoneRouting} option every weighted policy accepts: keep calls in the caller's zone
 * while the zone's READY capacity carries its share, spill the excess to other zones by their
 * spare capacity, and route to every zone below {@code minLocalEndpoints} local READY endpoints
 * (the formula is in {@code docs/balancer.md}).
 *
 * <pre>{@code
 * {"weighted_least_request": {"zoneRouting": {"minLocalEndpoints": 2, "spillLoad": 1.0}}}
 * }</pre>
 *
 * <p>Zone routing applies only when the caller's zone is known: this config's {@code zone}, else
 * the resolver's {@code io.steelyard.registry.Localities.CALLER_ZONE} (the etcd resolver's
 * {@code ?zone=} or {@code STEELYARD_ZONE}). Without a caller zone, or with {@code enabled:
 * false}, balancing is zone-blind.
 */
@Immutable
public final class ZoneRoutingConfig {

  /** The option's name in a policy's config. */
  public static final String FIELD = "zoneRouting";

  /** Optional, default true: false turns zone routing off even when the caller's zone is known. */
  public static final String FIELD_ENABLED = "enabled";

  /** Optional: the caller's zone, above the resolver's; for callers whose resolver sets none. */
  public static final String FIELD_ZONE = "zone";

  /** Optional, default {@value #DEFAULT_MIN_LOCAL_ENDPOINTS}: below it, route to every zone. */
  public static final String FIELD_MIN_LOCAL_ENDPOINTS = "minLocalEndpoints";

  /**
   * Optional, default {@value #DEFAULT_SPILL_LOAD}, {@code weighted_least_request} only: a local
   * endpoint is full when {@code (outstanding + 1) × penalty / weight} exceeds it, and its call
   * then goes to another zone's candidate whose {@code (outstanding + 1) × penalty / weight +
   * errorCost} is lower than its own; 0 turns the live-load spill off.
   */
  public static final String FIELD_SPILL_LOAD = "spillLoad";

  /** The fields of the {@code zoneRouting} object. */
  public static final Set<String> FIELDS =
      ImmutableSortedSet.of(FIELD_ENABLED, FIELD_ZONE, FIELD_MIN_LOCAL_ENDPOINTS, FIELD_SPILL_LOAD);

  /**
   * One READY local endpoint is enough to keep calls local: the formula already gives a zone
   * that lost most of its capacity only the share that capacity carries.
   */
  public static final int DEFAULT_MIN_LOCAL_ENDPOINTS = 1;

  /**
   * An endpoint is full at one outstanding call per unit of weight: exact where weights count
   * concurrent calls (workers, cores); scale it where they do not.
   */
  public static final double DEFAULT_SPILL_LOAD = 1.0;

  /** Largest {@code minLocalEndpoints} accepted. */
  public static final int MAX_MIN_LOCAL_ENDPOINTS = 10_000;

  /** Largest {@code spillLoad} accepted. */
  public static final double MAX_SPILL_LOAD = 1_000_000;

  /** Every default: on when the caller's zone is known. */
  public static final ZoneRoutingConfig DEFAULT = builder().build();

  private final boolean enabled;
  @Nullable private final String zone;
  private final int minLocalEndpoints;
  private final double spillLoad;

  private ZoneRoutingConfig(Builder builder) {
    this.enabled = builder.enabled;
    this.zone = builder.zone;
    this.minLocalEndpoints = builder.minLocalEndpoints;
    this.spillLoad = builder.spillLoad;
  }

  /** A builder starting from every default. */
  public static Builder builder() {
    return new Builder();
  }

  /** Builds a {@link ZoneRoutingConfig}; each setter checks its value. */
  public static final class Builder {
    private boolean enabled = true;
    @Nullable private String zone;
    private int minLocalEndpoints = DEFAULT_MIN_LOCAL_ENDPOINTS;
    private double spillLoad = DEFAULT_SPILL_LOAD;

    private Builder() {}

    /** False: zone-blind whatever the caller's zone. Default true. */
    public Builder enabled(boolean enabled) {
      this.enabled = enabled;
      return this;
    }

    /**
     * The caller's zone, or null (the default) to take the resolver's.
     *
     * @throws IllegalArgumentException unless 1..128 characters of {@code [A-Za-z0-9._-]}
     */
    public Builder zone(@Nullable String zone) {
      this.zone = zone == null ? null : Localities.checkName(FIELD_ZONE, zone);
      return this;
    }

    /** 1..10,000: fewer READY local endpoints route to every zone. */
    public Builder minLocalEndpoints(int minLocalEndpoints) {
      checkArgument(
          minLocalEndpoints >= 1 && minLocalEndpoints <= MAX_MIN_LOCAL_ENDPOINTS,
          "minLocalEndpoints: %s (expected: 1..%s)",
          minLocalEndpoints,
          MAX_MIN_LOCAL_ENDPOINTS);
      this.minLocalEndpoints = minLocalEndpoints;
      return this;
    }

    /** 0..1,000,000: see {@link #FIELD_SPILL_LOAD}. */
    public Builder spillLoad(double spillLoad) {
      checkArgument(
          spillLoad >= 0 && spillLoad <= MAX_SPILL_LOAD,
          "spillLoad: %s (expected: 0..%s)",
          spillLoad,
          MAX_SPILL_LOAD);
      this.spillLoad = spillLoad;
      return this;
    }

    public ZoneRoutingConfig build() {
      return new ZoneRoutingConfig(this);
    }
  }

  public boolean enabled() {
    return enabled;
  }

  /** The caller's zone this config names, or null: the resolver's. */
  @Nullable
  public String zone() {
    return zone;
  }

  public int minLocalEndpoints() {
    return minLocalEndpoints;
  }

  public double spillLoad() {
    return spillLoad;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ZoneRoutingConfig that
        && enabled == that.enabled
        && Objects.equals(zone, that.zone)
        && minLocalEndpoints == that.minLocalEndpoints
        && Double.compare(spillLoad, that.spillLoad) == 0;
  }

  @Override
  public int hashCode() {
    return Objects.hash(enabled, zone, minLocalEndpoints, spillLoad);
  }

  @Override
  public String toString() {
    return "{enabled="
        + enabled
        + (zone == null ? "" : ", zone=" + zone)
        + ", minLocalEndpoints="
        + minLocalEndpoints
        + ", spillLoad="
        + spillLoad
        + "}";
  }
}
