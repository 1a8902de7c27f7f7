package io.steelyard.stork;

import io.smallrye.stork.api.MetadataKey;

/**
 * The typed metadata of a steelyard {@link io.smallrye.stork.api.ServiceInstance}, beside its
 * labels (which carry every metadata entry of the registered value, as text, plus {@code weight}):
 *
 * <pre>{@code
 * int weight = (Integer) instance.getMetadata().getMetadata().get(SteelyardMetadataKey.WEIGHT);
 * String zone = instance.getLabels().get("zone");   // null when the instance declared none
 * }</pre>
 *
 * <p>The registrar reads the same keys from the {@code Metadata} it is given: {@link #WEIGHT}
 * (an {@code Integer}), {@link #ZONE} and {@link #REGION} (strings).
 */
public enum SteelyardMetadataKey implements MetadataKey {
  /** The registered weight, 0..1,000,000 (0: drained); an {@code Integer}. */
  WEIGHT("weight"),
  /** The zone the instance declared ({@code io.steelyard.registry.Localities#ZONE_KEY}). */
  ZONE("zone"),
  /** The region the instance declared ({@code io.steelyard.registry.Localities#REGION_KEY}). */
  REGION("region");

  private final String name;

  SteelyardMetadataKey(String name) {
    this.name = name;
  }

  @Override
  public String getName() {
    return name;
  }
}
