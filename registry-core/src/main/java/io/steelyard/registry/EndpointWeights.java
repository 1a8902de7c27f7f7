package io.steelyard.registry;

import static com.google.common.base.Preconditions.checkArgument;
import static java.util.Objects.requireNonNull;

import com.google.common.collect.ImmutableMap;
import io.grpc.Attributes;
import io.grpc.EquivalentAddressGroup;
import java.util.Map;

/**
 * Attaches a weight (and optional metadata) to an {@link EquivalentAddressGroup} and reads it
 * back. This is the only contract between a resolver and steelyard's balancers: the etcd
 * resolver in {@code discovery-client} writes it, the policies in {@code balancer} read it, and
 * any other resolver (DNS, a static list) may write it too.
 *
 * <p>Why here, in the registry contract: a grpc {@link Attributes.Key} is compared by identity, so
 * the writer and the reader must share this one class, and neither should depend on the other.
 * {@code registry-core} already needs {@code grpc-api} (jetcd is built on grpc, and the etcd call
 * layer classifies failures by gRPC status), so the key costs no new dependency; the weight's
 * range is the registry's own ({@link Validation#MAX_WEIGHT}).
 *
 * <pre>{@code
 * EquivalentAddressGroup eag = EndpointWeights.withWeight(
 *     new EquivalentAddressGroup(new InetSocketAddress("10.0.0.7", 50051)), 5);
 * int w = EndpointWeights.weight(eag); // 5; an address without the attribute weighs 1
 * }</pre>
 *
 * <p>Weights are integers in {@code 0..}{@value #MAX_WEIGHT}; {@code 0} means drained (never
 * picked while any other endpoint has a positive weight).
 */
public final class EndpointWeights {

  /** Weight of an endpoint that carries no weight attribute (DNS, static lists). */
  public static final int DEFAULT_WEIGHT = Validation.DEFAULT_WEIGHT;

  /** The largest weight accepted anywhere in steelyard: {@value}. */
  public static final int MAX_WEIGHT = Validation.MAX_WEIGHT;

  /** The endpoint's weight, an {@link Integer} in {@code 0..MAX_WEIGHT}. */
  @EquivalentAddressGroup.Attr
  public static final Attributes.Key<Integer> WEIGHT = Attributes.Key.create("io.steelyard.weight");

  /** Free-form endpoint metadata (zone, version, ...), an immutable {@code Map<String, String>}. */
  @EquivalentAddressGroup.Attr
  public static final Attributes.Key<Map<String, String>> METADATA =
      Attributes.Key.create("io.steelyard.metadata");

  private EndpointWeights() {}

  /** Returns a copy of {@code eag} whose attributes carry {@code weight}. */
  public static EquivalentAddressGroup withWeight(EquivalentAddressGroup eag, int weight) {
    requireNonNull(eag, "eag");
    checkWeight(weight);
    Attributes attrs = eag.getAttributes().toBuilder().set(WEIGHT, weight).build();
    return new EquivalentAddressGroup(eag.getAddresses(), attrs);
  }

  /** Returns a copy of {@code eag} whose attributes carry {@code weight} and {@code metadata}. */
  public static EquivalentAddressGroup withWeight(
      EquivalentAddressGroup eag, int weight, Map<String, String> metadata) {
    requireNonNull(eag, "eag");
    requireNonNull(metadata, "metadata");
    checkWeight(weight);
    Attributes attrs =
        eag.getAttributes().toBuilder()
            .set(WEIGHT, weight)
            .set(METADATA, ImmutableMap.copyOf(metadata))
            .build();
    return new EquivalentAddressGroup(eag.getAddresses(), attrs);
  }

  /** The weight carried by {@code attrs}, or {@link #DEFAULT_WEIGHT} when absent or invalid. */
  public static int weight(Attributes attrs) {
    Integer w = attrs.get(WEIGHT);
    if (w == null || w < 0 || w > MAX_WEIGHT) {
      return DEFAULT_WEIGHT;
    }
    return w;
  }

  /** The weight carried by {@code eag}, or {@link #DEFAULT_WEIGHT} when absent. */
  public static int weight(EquivalentAddressGroup eag) {
    return weight(eag.getAttributes());
  }

  /** The metadata carried by {@code eag}, or an empty map. */
  public static Map<String, String> metadata(EquivalentAddressGroup eag) {
    Map<String, String> m = eag.getAttributes().get(METADATA);
    return m == null ? ImmutableMap.of() : m;
  }

  private static void checkWeight(int weight) {
    checkArgument(
        weight >= 0 && weight <= MAX_WEIGHT, "weight: %s (expected: 0..%s)", weight, MAX_WEIGHT);
  }
}
