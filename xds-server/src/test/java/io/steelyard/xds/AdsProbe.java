package io.steelyard.xds;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.rpc.Status;
import io.envoyproxy.envoy.config.core.v3.Node;
import io.envoyproxy.envoy.service.discovery.v3.AggregatedDiscoveryServiceGrpc;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryResponse;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import javax.annotation.Nullable;

/**
 * A hand-driven ADS client (state of the world): subscribes, and ACKs or NACKs each response as
 * the test says, the way a real client would.
 */
final class AdsProbe implements AutoCloseable {

  static final String EDS = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment";
  static final String LDS = "type.googleapis.com/envoy.config.listener.v3.Listener";
  static final String CDS = "type.googleapis.com/envoy.config.cluster.v3.Cluster";

  private final ManagedChannel channel;
  private final StreamObserver<DiscoveryRequest> requests;
  private final BlockingQueue<DiscoveryResponse> responses = new LinkedBlockingQueue<>();
  private final Node node;
  private volatile Throwable error;

  AdsProbe(int port, String nodeId) {
    this(ManagedChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build(), nodeId);
  }

  /** Over {@code channel} (TLS, mutual TLS), which the probe closes. */
  AdsProbe(ManagedChannel channel, String nodeId) {
    this.channel = channel;
    node = Node.newBuilder().setId(nodeId).build();
    requests =
        AggregatedDiscoveryServiceGrpc.newStub(channel)
            .streamAggregatedResources(
                new StreamObserver<>() {
                  @Override
                  public void onNext(DiscoveryResponse r) {
                    responses.add(r);
                  }

                  @Override
                  public void onError(Throwable t) {
                    error = t;
                  }

                  @Override
                  public void onCompleted() {}
                });
  }

  void subscribe(String typeUrl, List<String> names) {
    requests.onNext(
        DiscoveryRequest.newBuilder().setNode(node).setTypeUrl(typeUrl).addAllResourceNames(names).build());
  }

  void ack(DiscoveryResponse r, List<String> names) {
    requests.onNext(
        DiscoveryRequest.newBuilder()
            .setTypeUrl(r.getTypeUrl())
            .addAllResourceNames(names)
            .setVersionInfo(r.getVersionInfo())
            .setResponseNonce(r.getNonce())
            .build());
  }

  void nack(DiscoveryResponse r, List<String> names, String acceptedVersion, String why) {
    requests.onNext(
        DiscoveryRequest.newBuilder()
            .setTypeUrl(r.getTypeUrl())
            .addAllResourceNames(names)
            .setVersionInfo(acceptedVersion)
            .setResponseNonce(r.getNonce())
            .setErrorDetail(Status.newBuilder().setCode(3).setMessage(why))
            .build());
  }

  /** The next response, failing the test after {@code timeout}. */
  DiscoveryResponse next(Duration timeout) throws InterruptedException {
    DiscoveryResponse r = responses.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
    assertThat(r).as("a response within %s", timeout).isNotNull();
    return r;
  }

  /** The next response, or null when none comes within {@code timeout}. */
  @Nullable
  DiscoveryResponse poll(Duration timeout) throws InterruptedException {
    return responses.poll(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** How the stream failed, or null while it is open. */
  @Nullable
  Throwable error() {
    return error;
  }

  @Override
  public void close() {
    requests.onCompleted();
    channel.shutdownNow();
    try {
      channel.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
