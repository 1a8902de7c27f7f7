package io.steelyard.xds;

import static java.util.Objects.requireNonNull;

import io.envoyproxy.controlplane.cache.ConfigWatcher;
import io.envoyproxy.controlplane.cache.DeltaResponse;
import io.envoyproxy.controlplane.cache.DeltaWatch;
import io.envoyproxy.controlplane.cache.DeltaXdsRequest;
import io.envoyproxy.controlplane.cache.NodeGroup;
import io.envoyproxy.controlplane.cache.Response;
import io.envoyproxy.controlplane.cache.Watch;
import io.envoyproxy.controlplane.cache.XdsRequest;
import io.envoyproxy.controlplane.cache.v3.SimpleCache;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.core.v3.Node;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/**
 * The cache, with the stream's node on every request (C-core and grpc-js send it only in a
 * stream's first request, and the cache groups clients by node), and two state-of-the-world
 * requests answered as a client needs them:
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
  private final NodeGroup<String> groups;

  WatchGuard(SimpleCache<String> cache, XdsCallbacks callbacks, NodeGroup<String> groups) {
    this.cache = requireNonNull(cache, "cache");
    this.callbacks = requireNonNull(callbacks, "callbacks");
    this.groups = requireNonNull(groups, "groups");
  }

  @Override
  public Watch createWatch(
      boolean ads,
      XdsRequest request,
      Set<String> knownResourceNames,
      Consumer<Response> responseConsumer,
      boolean hasClusterChanged,
      boolean allowDefaultEmptyEdsUpdate) {
    Node node = callbacks.takeStreamNode();
    String rejected = request.hasErrorDetail() ? callbacks.takeRejectedVersion(request.v3Request()) : null;
    XdsRequest effective = request;
    if (!request.v3Request().hasNode() && node != null) {
      effective = XdsRequest.create(request.v3Request().toBuilder().setNode(node).build());
    }
    Set<String> known = knownResourceNames;
    if (ads && !request.getResourceNamesList().isEmpty() && !allServed(effective)) {
      known = Set.copyOf(request.getResourceNamesList());
    }
    if (request.hasErrorDetail()) {
      if (rejected != null) {
        effective = XdsRequest.create(effective.v3Request().toBuilder().setVersionInfo(rejected).build());
        // The client has seen these names, it rejected them: without this the cache takes them
        // for names never sent (a NACK does not count as an ACK) and answers at once.
        known = Set.copyOf(request.getResourceNamesList());
      }
    }
    return cache.createWatch(ads, effective, known, responseConsumer, hasClusterChanged, allowDefaultEmptyEdsUpdate);
  }

  private boolean allServed(XdsRequest request) {
    Snapshot snapshot = cache.getSnapshot(groups.hash(request.v3Request().getNode()));
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
    Node node = callbacks.takeStreamNode();
    DeltaXdsRequest effective =
        !request.v3Request().hasNode() && node != null
            ? DeltaXdsRequest.create(request.v3Request().toBuilder().setNode(node).build())
            : request;
    return cache.createDeltaWatch(
        effective, requesterVersion, resourceVersions, pendingResources, isWildcard, responseConsumer, hasClusterChanged);
  }
}
