package io.steelyard.balancer.internal;

import io.grpc.NameResolver.ConfigOrError;
import io.grpc.Status;
import io.steelyard.balancer.spi.ClientSubset;
import io.steelyard.balancer.spi.WeightedPolicyConfig;
import java.util.Map;
import java.util.function.Function;

/**
 * The {@code subsetSize} and {@code subsetClientId} options of every weighted policy:
 *
 * <pre>{@code
 * {"loadBalancingConfig": [{"weighted_random": {"subsetSize": 20, "subsetClientId": "billing-7f9c"}}]}
 * }</pre>
 *
 * <p>{@code subsetSize} (an integer from 1 to {@value #MAX_SIZE}) turns the client subset on: the
 * balancer keeps a child only for the {@link ClientSubset} of the endpoints. {@code
 * subsetClientId} names this client for the hashing; it defaults to {@code $HOSTNAME} (stable
 * across restarts of a pod or host), else to {@code pid-<pid>}. Two channels of one process with
 * one identity choose the same client subset. {@code subsetClientId} without {@code subsetSize} is an
 * error, so a half-written config is not silently a no-op.
 */
final class ClientSubsetOption {

  static final String SIZE = WeightedPolicyConfig.FIELD_SUBSET_SIZE;
  static final String CLIENT_ID = WeightedPolicyConfig.FIELD_SUBSET_CLIENT_ID;
  static final int MAX_SIZE = 10_000;

  private ClientSubsetOption() {}

  static ConfigOrError parse(
      String policyName, Map<String, ?> raw, Function<ClientSubset, Object> toConfig) {
    Object size = raw.get(SIZE);
    Object id = raw.get(CLIENT_ID);
    if (size == null) {
      return error(policyName, raw.containsKey(SIZE) ? SIZE : CLIENT_ID,
          raw.containsKey(SIZE) ? "null (expected: an integer 1.." + MAX_SIZE + ")"
              : "set without " + SIZE + " (expected: both, or " + SIZE + " alone)");
    }
    // JSON numbers arrive as doubles (Gson); 20.0 is 20, 20.5 is not an integer.
    if (!(size instanceof Number n) || n.doubleValue() != Math.rint(n.doubleValue())
        || n.doubleValue() < 1 || n.doubleValue() > MAX_SIZE) {
      return error(policyName, SIZE, size + " (expected: an integer 1.." + MAX_SIZE + ")");
    }
    String identity;
    if (raw.containsKey(CLIENT_ID)) {
      if (!(id instanceof String s) || s.isBlank()) {
        return error(policyName, CLIENT_ID, id + " (expected: a non-empty string)");
      }
      identity = s;
    } else {
      identity = defaultIdentity();
    }
    return ConfigOrError.fromConfig(toConfig.apply(ClientSubset.of(identity, (int) ((Number) size).doubleValue())));
  }

  static String defaultIdentity() {
    String host = System.getenv("HOSTNAME");
    return host != null && !host.isBlank() ? host : "pid-" + ProcessHandle.current().pid();
  }

  private static ConfigOrError error(String policyName, String field, String what) {
    return ConfigOrError.fromError(
        Status.UNAVAILABLE.withDescription(policyName + "." + field + ": " + what));
  }
}
