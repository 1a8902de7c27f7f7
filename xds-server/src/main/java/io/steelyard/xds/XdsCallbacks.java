package io.steelyard.xds;

import static java.util.Objects.requireNonNull;

import io.envoyproxy.controlplane.server.DiscoveryServerCallbacks;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryResponse;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.steelyard.registry.Validation;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Remembers each stream's node from its first request, tells {@link Subscribers} which services
 * each stream's assignments subscribe to, counts streams and responses, and reports each rejected response (NACK) once, with the node
 * that rejected it and the reason the node gave. A NACK changes nothing for other clients: the
 * cache keeps the rejecting client's watch at the version it last accepted.
 *
 * <p>Threading: called on gRPC's threads, several streams at once.
 */
final class XdsCallbacks implements DiscoveryServerCallbacks {

  private static final Logger log = LoggerFactory.getLogger(XdsCallbacks.class);

  private static final String EDS_TYPE = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";

  private final XdsMetrics metrics;
  private final Subscribers subscribers;
  /** Node per stream: C-core and grpc-js send their node only in a stream's first request. */
  private final Map<Long, Node> nodes = new ConcurrentHashMap<>();
  /**
   * The node of the stream whose request is being handled, from the callback to {@link
   * #takeStreamNode}: the server calls both on the same thread, callback first.
   */
  private final ThreadLocal<Node> handling = new ThreadLocal<>();
  /** The last NACK logged per stream, so that a client repeating one is logged once. */
  private final Map<Long, String> lastNack = new ConcurrentHashMap<>();
  /** Per stream and type URL, the nonce and version of the last response sent. */
  private final Map<Long, Map<String, String[]>> sent = new ConcurrentHashMap<>();
  /**
   * NACK requests (by identity) to the version they rejected, from the callback to {@link
   * #takeRejectedVersion}: the server calls both on the same thread, callback first.
   */
  private final Map<DiscoveryRequest, String> rejected =
      java.util.Collections.synchronizedMap(new java.util.IdentityHashMap<>());

  XdsCallbacks(XdsMetrics metrics, Subscribers subscribers) {
    this.metrics = requireNonNull(metrics, "metrics");
    this.subscribers = requireNonNull(subscribers, "subscribers");
  }

  @Override
  public void onStreamOpen(long streamId, String typeUrl) {
    metrics.streamOpened();
  }

  @Override
  public void onStreamClose(long streamId, String typeUrl) {
    closed(streamId);
  }

  @Override
  public void onStreamCloseWithError(long streamId, String typeUrl, Throwable error) {
    closed(streamId);
  }

  private void closed(long streamId) {
    metrics.streamClosed();
    nodes.remove(streamId);
    subscribers.closed(streamId);
    lastNack.remove(streamId);
    sent.remove(streamId);
  }

  @Override
  public void onV3StreamRequest(long streamId, DiscoveryRequest request) {
    String node = node(streamId, request.hasNode() ? request.getNode() : null);
    if (EDS_TYPE.equals(request.getTypeUrl())) {
      subscribers.subscribed(streamId, services(request.getResourceNamesList()));
    }
    if (request.hasErrorDetail()) {
      nack(streamId, node, request.getTypeUrl(), request.getResponseNonce(),
          request.getErrorDetail().getMessage());
      String[] last = sent.getOrDefault(streamId, Map.of()).get(request.getTypeUrl());
      if (last != null && last[0].equals(request.getResponseNonce())) {
        rejected.put(request, last[1]);
      }
    }
  }

  /** The services of assignment names: a split's clusters ({@link XdsRoutes}) count as their service. */
  private static java.util.Set<String> services(java.util.List<String> names) {
    java.util.Set<String> out = new java.util.LinkedHashSet<>();
    for (String name : names) {
      out.add(XdsRoutes.serviceOf(name));
    }
    return out;
  }

  /**
   * The version {@code request}, a NACK, rejected, or null. The cache would answer a NACK at once
   * with the same resources, which the client would reject again, and again; waiting as if the
   * client held the rejected version sends it the next change instead.
   */
  String takeRejectedVersion(DiscoveryRequest request) {
    return rejected.remove(request);
  }

  @Override
  public void onV3StreamDeltaRequest(long streamId, DeltaDiscoveryRequest request) {
    String node = node(streamId, request.hasNode() ? request.getNode() : null);
    if (EDS_TYPE.equals(request.getTypeUrl())) {
      // A split's clusters (SERVICE/i) count as their service; a delta stream that unsubscribes
      // them keeps counting for the service until it unsubscribes SERVICE or ends.
      subscribers.subscribed(streamId, services(request.getResourceNamesSubscribeList()),
          request.getResourceNamesUnsubscribeList().stream().filter(n -> n.indexOf('/') < 0).toList());
    }
    if (request.hasErrorDetail()) {
      nack(streamId, node, request.getTypeUrl(), request.getResponseNonce(),
          request.getErrorDetail().getMessage());
    }
  }

  @Override
  public void onV3StreamResponse(long streamId, DiscoveryRequest request, DiscoveryResponse response) {
    metrics.pushed(shortType(response.getTypeUrl()));
    sent.computeIfAbsent(streamId, id -> new ConcurrentHashMap<>())
        .put(response.getTypeUrl(), new String[] {response.getNonce(), response.getVersionInfo()});
  }

  @Override
  public void onV3StreamDeltaResponse(
      long streamId, DeltaDiscoveryRequest request, DeltaDiscoveryResponse response) {
    metrics.pushed(shortType(response.getTypeUrl()));
  }

  /**
   * The stream's node id; the stream's first node is kept, for the requests that come without
   * one, and handed to {@link #takeStreamNode}.
   */
  private String node(long streamId, Node sent) {
    Node node = nodes.get(streamId);
    if (node == null && sent != null) {
      node = sent;
      nodes.put(streamId, sent);
      subscribers.node(streamId, sent);
    }
    handling.set(node);
    return node == null ? "" : node.getId();
  }

  /**
   * The node of the stream whose request this thread is handling, or null: for the cache's
   * grouping of requests that come without their node.
   */
  Node takeStreamNode() {
    Node node = handling.get();
    handling.remove();
    return node;
  }

  private void nack(long streamId, String node, String typeUrl, String nonce, String detail) {
    String type = shortType(typeUrl);
    metrics.nacked(type);
    String key = type + '\0' + detail;
    if (!key.equals(lastNack.put(streamId, key))) {
      log.warn("Client {} (stream {}) rejected {} (nonce {}): {}",
          Validation.quote(node), streamId, type, nonce, Validation.quote(detail));
    }
  }

  /**
   * LDS, CDS and EDS for the three types served, RDS for a route request (answered empty: each
   * Listener carries its route inline); the type URL's last part otherwise.
   */
  static String shortType(String typeUrl) {
    if (typeUrl.endsWith(".Listener")) {
      return "LDS";
    } else if (typeUrl.endsWith(".RouteConfiguration")) {
      return "RDS";
    } else if (typeUrl.endsWith(".Cluster")) {
      return "CDS";
    } else if (typeUrl.endsWith(".ClusterLoadAssignment")) {
      return "EDS";
    }
    int dot = typeUrl.lastIndexOf('.');
    return dot < 0 ? typeUrl : typeUrl.substring(dot + 1);
  }
}
