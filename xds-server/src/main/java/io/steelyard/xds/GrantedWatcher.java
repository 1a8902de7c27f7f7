package io.steelyard.xds;

import static java.util.Objects.requireNonNull;

import com.google.common.cache.Cache;
import com.google.common.cache.CacheBuilder;
import com.google.protobuf.Message;
import io.envoyproxy.controlplane.cache.ConfigWatcher;
import io.envoyproxy.controlplane.cache.DeltaResponse;
import io.envoyproxy.controlplane.cache.DeltaWatch;
import io.envoyproxy.controlplane.cache.DeltaXdsRequest;
import io.envoyproxy.controlplane.cache.Response;
import io.envoyproxy.controlplane.cache.VersionedResource;
import io.envoyproxy.controlplane.cache.Watch;
import io.envoyproxy.controlplane.cache.XdsRequest;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.steelyard.registry.Validation;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Least privilege per client identity: each response a client receives holds only the resources
 * of the services its grants name ({@link Grants}). A service outside the grant does not exist
 * for that client, as xDS expects of a name nobody serves: a state-of-the-world Listener or
 * Cluster response without it says so at once, and an EDS or RDS name never answered runs into
 * the client's does-not-exist timer. The same holds for wildcard and delta subscriptions.
 *
 * <p>A request naming a service outside the grant is logged once per identity and name, and
 * every withheld resource is counted ({@code steelyard.xds.denied}). A client without an identity
 * (one of a plaintext loopback listener) is served as without grants.
 *
 * <p>Threading: {@code createWatch} runs on the stream's gRPC thread, in its {@link
 * io.grpc.Context}, where the identity is read; responses may come from any thread, and are
 * filtered with the grants current then, so a changed file takes effect on the next push.
 */
final class GrantedWatcher implements ConfigWatcher {

  private static final Logger log = LoggerFactory.getLogger(GrantedWatcher.class);

  private final ConfigWatcher delegate;
  private final GrantsFile grants;
  private final XdsMetrics metrics;
  /** (identity, name) denials already logged; bounded so that a scanning client cannot grow it. */
  private final Cache<String, Boolean> logged = CacheBuilder.newBuilder().maximumSize(10_000).build();

  GrantedWatcher(ConfigWatcher delegate, GrantsFile grants, XdsMetrics metrics) {
    this.delegate = requireNonNull(delegate, "delegate");
    this.grants = requireNonNull(grants, "grants");
    this.metrics = requireNonNull(metrics, "metrics");
  }

  @Override
  public Watch createWatch(
      boolean ads,
      XdsRequest request,
      Set<String> knownResourceNames,
      Consumer<Response> responseConsumer,
      boolean hasClusterChanged,
      boolean allowDefaultEmptyEdsUpdate) {
    String identity = ClientIdentity.current();
    if (identity == null) {
      return delegate.createWatch(
          ads, request, knownResourceNames, responseConsumer, hasClusterChanged, allowDefaultEmptyEdsUpdate);
    }
    Grants now = grants.current();
    for (String name : request.getResourceNamesList()) {
      if (!now.allows(identity, XdsRoutes.serviceOf(name))) {
        denied(identity, name, request.getTypeUrl());
      }
    }
    Consumer<Response> filtered = r -> responseConsumer.accept(filter(identity, r));
    return delegate.createWatch(
        ads, request, knownResourceNames, filtered, hasClusterChanged, allowDefaultEmptyEdsUpdate);
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
    String identity = ClientIdentity.current();
    Consumer<DeltaResponse> consumer = responseConsumer;
    if (identity != null) {
      Grants now = grants.current();
      for (String name : request.v3Request().getResourceNamesSubscribeList()) {
        if (!now.allows(identity, XdsRoutes.serviceOf(name))) {
          denied(identity, name, request.getTypeUrl());
        }
      }
      consumer = r -> responseConsumer.accept(filter(identity, r));
    }
    return delegate.createDeltaWatch(
        request, requesterVersion, resourceVersions, pendingResources, isWildcard, consumer, hasClusterChanged);
  }

  private Response filter(String identity, Response response) {
    Grants now = grants.current();
    List<Message> kept = new ArrayList<>(response.resources().size());
    int withheld = 0;
    for (Message m : response.resources()) {
      if (now.allows(identity, serviceOf(m))) {
        kept.add(m);
      } else {
        withheld++;
      }
    }
    if (withheld == 0) {
      return response;
    }
    metrics.denied(withheld);
    return Response.create(response.request(), kept, response.version());
  }

  private DeltaResponse filter(String identity, DeltaResponse response) {
    Grants now = grants.current();
    Map<String, VersionedResource<?>> kept = new LinkedHashMap<>();
    int withheld = 0;
    for (Map.Entry<String, VersionedResource<? extends Message>> e : response.resources().entrySet()) {
      if (now.allows(identity, XdsRoutes.serviceOf(e.getKey()))) {
        kept.put(e.getKey(), e.getValue());
      } else {
        withheld++;
      }
    }
    if (withheld == 0) {
      return response;
    }
    metrics.denied(withheld);
    return DeltaResponse.create(response.request(), kept, response.removedResources(), response.version());
  }

  /**
   * The service a resource belongs to: every resource is named after its service, a split's
   * clusters {@code SERVICE/i} ({@link XdsRoutes}).
   */
  static String serviceOf(Message resource) {
    if (resource instanceof ClusterLoadAssignment cla) {
      return XdsRoutes.serviceOf(cla.getClusterName());
    } else if (resource instanceof Cluster c) {
      return XdsRoutes.serviceOf(c.getName());
    } else if (resource instanceof Listener l) {
      return l.getName();
    } else if (resource instanceof RouteConfiguration r) {
      return r.getName();
    }
    throw new IllegalArgumentException("not a resource steelyard-xds serves: " + resource.getDescriptorForType());
  }

  private void denied(String identity, String name, String typeUrl) {
    if (logged.asMap().putIfAbsent(identity + '\0' + name, Boolean.TRUE) == null) {
      log.warn("Client {} asked for {} ({}), which its grants in {} do not name: it does not exist for that client",
          Validation.quote(identity), Validation.quote(name), XdsCallbacks.shortType(typeUrl), grants.file());
    }
  }
}
