package io.steelyard.xds;

import static com.google.common.base.Preconditions.checkArgument;
import static java.util.Objects.requireNonNull;

import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.annotation.concurrent.GuardedBy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Bounds what ADS clients may hold: concurrent streams per peer address and in total, and
 * resource names per stream and type. A stream over a bound is closed with {@code
 * RESOURCE_EXHAUSTED} and a message naming the bound and its flag; the streams already open, the
 * peer's own included, and every other client are unaffected. A peer is its IP address, so the
 * processes of one host (or behind one NAT) share its bound.
 *
 * <p>Only the two ADS methods are bounded; the health service is not.
 *
 * <p>Thread-safe.
 */
final class StreamLimits implements ServerInterceptor {

  /** Default bound of concurrent ADS streams from one IP address: {@value}. */
  static final int DEFAULT_STREAMS_PER_PEER = 100;
  /** Default bound of concurrent ADS streams in total: {@value}. */
  static final int DEFAULT_STREAMS = 10_000;
  /** Default bound of resource names one stream subscribes to, per type: {@value}. */
  static final int DEFAULT_NAMES_PER_STREAM = 1_000;

  private static final Logger log = LoggerFactory.getLogger(StreamLimits.class);
  private static final Set<String> ADS_METHODS =
      Set.of(
          AggregatedDiscoveryServiceGrpc.getStreamAggregatedResourcesMethod().getFullMethodName(),
          AggregatedDiscoveryServiceGrpc.getDeltaAggregatedResourcesMethod().getFullMethodName());

  private final int streamsPerPeer;
  private final int streams;
  private final int namesPerStream;
  private final XdsMetrics metrics;
  private final AtomicInteger open = new AtomicInteger();
  private final Map<String, AtomicInteger> openByPeer = new ConcurrentHashMap<>();

  StreamLimits(int streamsPerPeer, int streams, int namesPerStream, XdsMetrics metrics) {
    checkArgument(streamsPerPeer > 0, "max streams per peer: %s (expected: at least 1)", streamsPerPeer);
    checkArgument(streams > 0, "max streams: %s (expected: at least 1)", streams);
    checkArgument(namesPerStream > 0, "max names per stream: %s (expected: at least 1)", namesPerStream);
    this.streamsPerPeer = streamsPerPeer;
    this.streams = streams;
    this.namesPerStream = namesPerStream;
    this.metrics = requireNonNull(metrics, "metrics");
  }

  @Override
  public <Q, R> ServerCall.Listener<Q> interceptCall(
      ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
    if (!ADS_METHODS.contains(call.getMethodDescriptor().getFullMethodName())) {
      return next.startCall(call, headers);
    }
    String peer = peerOf(call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR));
    String refusal = acquire(peer);
    if (refusal != null) {
      refuse(call, peer, "streams", refusal);
      return new ServerCall.Listener<>() {};
    }
    OnceClosedCall<Q, R> guarded = new OnceClosedCall<>(call);
    ServerCall.Listener<Q> listener;
    try {
      listener = next.startCall(guarded, headers);
    } catch (RuntimeException e) {
      release(peer);
      throw e;
    }
    return new Bounded<>(listener, guarded, peer);
  }

  /** Takes a stream slot for {@code peer}, or says which bound is full. */
  @javax.annotation.Nullable
  String acquire(String peer) {
    if (open.incrementAndGet() > streams) {
      open.decrementAndGet();
      return "more than " + streams + " concurrent xDS streams in total (--max-streams)";
    }
    AtomicInteger mine = openByPeer.computeIfAbsent(peer, p -> new AtomicInteger());
    if (mine.incrementAndGet() > streamsPerPeer) {
      release(peer);
      return "more than " + streamsPerPeer + " concurrent xDS streams from " + peer + " (--max-streams-per-peer)";
    }
    return null;
  }

  void release(String peer) {
    open.decrementAndGet();
    openByPeer.computeIfPresent(peer, (p, n) -> n.decrementAndGet() <= 0 ? null : n);
  }

  /** Streams open now, counted against the bounds. */
  int open() {
    return open.get();
  }

  /** A peer as the bounds and the logs name it: its IP address, without the port. */
  static String peerOf(@javax.annotation.Nullable SocketAddress address) {
    if (address instanceof InetSocketAddress a && a.getAddress() != null) {
      return a.getAddress().getHostAddress();
    }
    return String.valueOf(address);
  }

  private void refuse(ServerCall<?, ?> call, String peer, String bound, String message) {
    metrics.refused(bound);
    log.debug("Closed an xDS stream from {}: {}", peer, message);
    call.close(Status.RESOURCE_EXHAUSTED.withDescription("xds: " + message), new Metadata());
  }

  /** A call that may be closed more than once: the limit closes it, the ADS stream may too. */
  private static final class OnceClosedCall<Q, R> extends ForwardingServerCall.SimpleForwardingServerCall<Q, R> {
    private final AtomicBoolean closed = new AtomicBoolean();

    OnceClosedCall(ServerCall<Q, R> call) {
      super(call);
    }

    @Override
    public void sendMessage(R message) {
      if (!closed.get()) {
        super.sendMessage(message);
      }
    }

    @Override
    public void close(Status status, Metadata trailers) {
      if (closed.compareAndSet(false, true)) {
        super.close(status, trailers);
      }
    }
  }

  /** Counts the stream's names per type, and gives its slot back once when it ends. */
  private final class Bounded<Q, R> extends ForwardingServerCallListener.SimpleForwardingServerCallListener<Q> {
    private final OnceClosedCall<Q, R> call;
    private final String peer;
    private final AtomicBoolean released = new AtomicBoolean();

    @GuardedBy("this")
    private final Map<String, Set<String>> deltaNames = new HashMap<>();

    private volatile boolean over;

    Bounded(ServerCall.Listener<Q> delegate, OnceClosedCall<Q, R> call, String peer) {
      super(delegate);
      this.call = call;
      this.peer = peer;
    }

    @Override
    public void onMessage(Q message) {
      if (over) {
        return;
      }
      int names = namesAfter(message);
      if (names > namesPerStream) {
        over = true;
        refuse(call, peer, "names",
            names + " resource names on one stream, more than " + namesPerStream + " (--max-names-per-stream)");
        // The ADS stream ends as if the client had closed it: its watches go, its count drops.
        super.onHalfClose();
        return;
      }
      super.onMessage(message);
    }

    private synchronized int namesAfter(Object message) {
      if (message instanceof DiscoveryRequest r) {
        return r.getResourceNamesCount();
      }
      if (message instanceof DeltaDiscoveryRequest r) {
        Set<String> names = deltaNames.computeIfAbsent(r.getTypeUrl(), t -> new HashSet<>());
        names.addAll(r.getResourceNamesSubscribeList());
        r.getResourceNamesUnsubscribeList().forEach(names::remove);
        return names.size();
      }
      return 0;
    }

    @Override
    public void onHalfClose() {
      if (!over) {
        super.onHalfClose();
      }
    }

    @Override
    public void onCancel() {
      done();
      super.onCancel();
    }

    @Override
    public void onComplete() {
      done();
      super.onComplete();
    }

    private void done() {
      if (released.compareAndSet(false, true)) {
        release(peer);
      }
    }
  }
}
