package io.steelyard.xds;

import static java.util.Objects.requireNonNull;

import io.envoyproxy.controlplane.cache.ConfigWatcher;
import io.envoyproxy.controlplane.cache.DeltaResponse;
import io.envoyproxy.controlplane.cache.DeltaWatch;
import io.envoyproxy.controlplane.cache.DeltaXdsRequest;
import io.envoyproxy.controlplane.cache.Response;
import io.envoyproxy.controlplane.cache.Watch;
import io.envoyproxy.controlplane.cache.XdsRequest;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

/**
 * The cache, except that a state-of-the-world NACK waits for the next change instead of being
 * answered at once with the resources just rejected (which a client would reject again, in a
 * loop as fast as the network). The rejecting client keeps what it last accepted; every other
 * client is unaffected.
 */
final class NackAwareWatcher implements ConfigWatcher {

  private final ConfigWatcher cache;
  private final XdsCallbacks callbacks;

  NackAwareWatcher(ConfigWatcher cache, XdsCallbacks callbacks) {
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
