package io.steelyard.balancer.spi;

import io.grpc.LoadBalancer.PickResult;
import io.grpc.LoadBalancer.PickSubchannelArgs;

/**
 * A picker that weighs each endpoint's live load, seen from outside: a pick split into choosing
 * an endpoint and taking it, with the chosen endpoint's load visible in between. It is what the
 * zone step's live-load spill asks of a policy ({@code zoneRouting.spillLoad}): when the endpoint
 * the local zone's picker chose is full, the call goes to a candidate of another zone instead if
 * that one ranks better. {@code weighted_least_request}'s pickers offer it; a policy offers it
 * through {@link LoadAwarePickerFactory#newLoadAwarePickers}.
 *
 * <p>Endpoints are named by their index in the picker (the order of the arrays it was built
 * from). {@code pick(choose(), args)} is the picker's own pick.
 *
 * <pre>{@code
 * int chosen = local.choose();
 * if (local.loadScore(chosen) > spillLoad) {
 *   int candidate = remote.choose();
 *   if (remote.rankScore(candidate) < local.rankScore(chosen)) {
 *     return remote.pick(candidate, args);
 *   }
 * }
 * return local.pick(chosen, args);
 * }</pre>
 *
 * <p>Threading: as the picker itself: immutable, thread-safe, lock-free; none of the methods
 * allocates.
 */
public interface LoadAwarePicker {

  /** The index of the endpoint this picker's next pick would take (draws at random). */
  int choose();

  /**
   * Endpoint {@code endpoint}'s load relative to its capacity, e.g. {@code (outstanding + 1) ×
   * penalty / weight}: what the zone step compares with its {@code spillLoad}. On the picker's
   * weight scale: a weight multiplied by slow start's scale divides the score by it.
   */
  double loadScore(int endpoint);

  /**
   * Endpoint {@code endpoint}'s score for ranking against a candidate of another picker: {@link
   * #loadScore} plus whatever else the policy counts against it (recent failures). Lower is
   * better.
   */
  double rankScore(int endpoint);

  /** The result of picking endpoint {@code endpoint}, as the picker's own pick returns it. */
  PickResult pick(int endpoint, PickSubchannelArgs args);
}
