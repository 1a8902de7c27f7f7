package io.steelyard.xds;

import static java.util.Objects.requireNonNull;

import io.envoyproxy.controlplane.cache.ConfigWatcher;
import io.envoyproxy.controlplane.cache.DeltaResponse;
import io.envoyproxy.controlplane.cache.DeltaWatch;
import io.envoyproxy.controlplane.cache.DeltaXdsRequest;
import io.envoyproxy.controlplane.cache.Response;
import io.envoyproxy.controlplane.cache.Watch;
import io.envoyproxy.controlplane.cache.XdsRequest;
import io.envoyproxy.controlplane.cache.v3.SimpleCache;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/**
 * The cache, with two state-of-the-world requests answered as a client needs them:
 *
 * <ul>
 *   <li>A NACK waits for the next change instead of being answered at once with the resources
 *       just rejected (which a client would reject again, in a loop as fast as the network). The
 *       rejecting client keeps what it last accepted; every other client is unaffected.
 *   <li>A request naming a resource not served yet waits until every name is served. SimpleCache
 *       1.0.49 would try to answer a first request at once when some of its names exist, fail on
 *       the missing one, and drop the watch: the client would never hear of the names.
 * </ul>
 */
final class WatchGuard implements ConfigWatcher {

  private final SimpleCache<String> cache;
  private final XdsCallbacks callbacks;

  WatchGuard(SimpleCache<String> cache, XdsCallbacks callbacks) {
    this.cache = requireNonNull(cache, "cache");
    this.callbacks = requireNonNull(callbacks, "callbacks");
  }

  @Override
  public Watch createWatch(
      boolean ads,
      XdsRequest request,
      Set<String> knownResourceNames,
      Consumer<Response> responseConsumer,
      boolean hasClusterChanged,
      boolean allowDefaultEmptyEdsUpdate) {
    XdsRequest effective = request;
    Set<String> known = knownResourceNames;
    if (ads && !request.getResourceNamesList().isEmpty() && !allServed(request)) {
      known = Set.copyOf(request.getResourceNamesList());
    }
    if (request.hasErrorDetail()) {
      String rejected = callbacks.takeRejectedVersion(request.v3Request());
      if (rejected != null) {
        effective = XdsRequest.create(request.v3Request().toBuilder().setVersionInfo(rejected).build());
        // The client has seen these names, it rejected them: without this the cache takes them
        // for names never sent (a NACK does not count as an ACK) and answers at once.
        known = Set.copyOf(request.getResourceNamesList());
      }
    }
    return cache.createWatch(ads, effective, known, responseConsumer, hasClusterChanged, allowDefaultEmptyEdsUpdate);
  }

  private boolean allServed(XdsRequest request) {
    Snapshot snapshot = cache.getSnapshot(XdsPublisher.GROUP);
    return snapshot != null
        && snapshot.resources(request.getResourceType()).keySet().containsAll(request.getResourceNamesList());
  }

  @Override
  public DeltaWatch createDeltaWatch(
      DeltaXdsRequest request,
      String requesterVersion,
      Map<String, String> resourceVersions,
      Set<String> pendingResources,
      boolean isWildcard,
      Consumer<DeltaResponse> responseConsumer,
      boolean hasClusterChanged) {
    return cache.createDeltaWatch(
        request, requesterVersion, resourceVersions, pendingResources, isWildcard, responseConsumer, hasClusterChanged);
  }
}
