package io.steelyard.examples;

import static com.google.common.base.Preconditions.checkArgument;
import static com.google.common.base.Preconditions.checkState;
import static java.util.Objects.requireNonNull;

import com.google.common.collect.ImmutableList;
import com.google.common.collect.ImmutableMap;
import io.grpc.LoadBalancerRegistry;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.stub.StreamObserver;
import io.steelyard.balancer.BalancerMetrics;
import io.steelyard.examples.proto.GreeterGrpc;
import io.steelyard.examples.proto.HelloReply;
import io.steelyard.examples.proto.HelloRequest;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.Validation;
import java.net.URI;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.stream.Collectors;
import javax.annotation.Nullable;

/**
 * A greeter channel through steelyard: an {@code etcd://} target, a weighted policy, optional
 * retries on UNAVAILABLE and client-side health checking — the whole client side of steelyard.
 *
 * <pre>{@code
 * try (GreeterClient client = GreeterClient.builder("http://127.0.0.1:2379", "greeter")
 *     .policy("weighted_random").build()) {
 *   String answeredBy = client.sayHello("world").getServerAddress();
 * }
 * }</pre>
 *
 * Thread-safe; one channel, shared by every call.
 */
public final class GreeterClient implements AutoCloseable {

  /** Default policy: {@value}. */
  public static final String DEFAULT_POLICY = "weighted_random";
  /** Default per-call deadline, in milliseconds: {@value}. */
  public static final long DEFAULT_DEADLINE_MILLIS = 5_000;
  /**
   * Default health service asked about: {@code ""}, the server's overall status, which every
   * standard health server answers (grpc-go's, grpc-java's HealthStatusManager); a named service
   * is answered SERVICE_UNKNOWN by a server that does not register it (docs/key-layout.md).
   */
  public static final String DEFAULT_HEALTH_SERVICE = "";

  private final ManagedChannel channel;
  private final GreeterGrpc.GreeterBlockingStub stub;
  private final GreeterGrpc.GreeterStub asyncStub;
  private final Duration deadline;

  private GreeterClient(Builder b) {
    ManagedChannelBuilder<?> mcb =
        ManagedChannelBuilder.forTarget(b.target)
            .usePlaintext()
            // Our config, not one from the resolver: this example is the reference usage.
            .disableServiceConfigLookUp()
            .defaultServiceConfig(
                serviceConfig(b.policy, b.retry, b.healthCheck ? b.healthService : null));
    if (b.metrics != null) {
      b.metrics.configure(mcb); // balancer weights/readiness and calls per backend
    }
    // Retries stay enabled either way: without a retry policy grpc-java still retries
    // transparently a call that never left the client (e.g. refused after a GOAWAY).
    mcb.enableRetry();
    this.channel = mcb.build();
    this.stub = GreeterGrpc.newBlockingStub(channel);
    this.asyncStub = GreeterGrpc.newStub(channel);
    this.deadline = b.deadline;
  }

  /** A client of {@code service} registered in the etcd at {@code endpoints}. */
  public static Builder builder(String endpoints, String service) {
    return new Builder(target(endpoints, service));
  }

  /** A client of any gRPC target, e.g. {@code etcd:///greeter}. */
  public static Builder forTarget(String target) {
    return new Builder(requireNonNull(target, "target"));
  }

  /**
   * The target naming {@code service} in the etcd at {@code endpoints}: {@code
   * etcd://HOST:PORT/SERVICE} for one member, {@code etcd:///SERVICE?endpoints=HOST:PORT,...} for
   * several (grpc-java parses targets as RFC 3986 URIs, where a host list is no authority). Such a
   * target names plain-HTTP etcd; for TLS or auth, register an {@code EtcdNameResolverProvider}
   * with that connection and use {@code etcd:///SERVICE}.
   */
  public static String target(String endpoints, String service) {
    Validation.checkServiceName(service);
    List<URI> uris = EtcdConnection.parseEndpoints(endpoints);
    if (uris.size() == 1) {
      return "etcd://" + uris.get(0).getRawAuthority() + "/" + service;
    }
    return "etcd:///" + service + "?endpoints="
        + uris.stream().map(URI::getRawAuthority).collect(Collectors.joining(","));
  }

  /**
   * The service config this client uses: the balancing policy; with {@code retry}, up to 5
   * attempts of a call that fails UNAVAILABLE (the status of a call caught on a server that
   * died or of a connection that broke); with {@code healthCheck}, {@code grpc.health.v1} on
   * every backend for the overall status {@code ""}, so a NOT_SERVING server gets no new calls.
   */
  public static Map<String, ?> serviceConfig(String policy, boolean retry, boolean healthCheck) {
    return serviceConfig(policy, retry, healthCheck ? DEFAULT_HEALTH_SERVICE : null);
  }

  /**
   * As {@link #serviceConfig(String, boolean, boolean)}, checking health service {@code
   * healthService} ({@code ""}: the overall status), or not at all when null.
   */
  public static Map<String, ?> serviceConfig(
      String policy, boolean retry, @Nullable String healthService) {
    ImmutableMap.Builder<String, Object> config = ImmutableMap.builder();
    config.put("loadBalancingConfig", ImmutableList.of(ImmutableMap.of(policy, ImmutableMap.of())));
    if (retry) {
      config.put(
          "methodConfig",
          ImmutableList.of(
              ImmutableMap.of(
                  "name", ImmutableList.of(ImmutableMap.of("service", GreeterGrpc.SERVICE_NAME)),
                  "retryPolicy",
                  ImmutableMap.of(
                      // JSON numbers: the service-config parser wants doubles.
                      "maxAttempts", 5.0,
                      "initialBackoff", "0.05s",
                      "maxBackoff", "0.5s",
                      "backoffMultiplier", 2.0,
                      "retryableStatusCodes", ImmutableList.of("UNAVAILABLE")))));
    }
    if (healthService != null) {
      config.put("healthCheckConfig", ImmutableMap.of("serviceName", healthService));
    }
    return config.build();
  }

  /** Whether a load-balancing policy of that name is on the classpath. */
  public static boolean policyAvailable(String policy) {
    return LoadBalancerRegistry.getDefaultRegistry().getProvider(policy) != null;
  }

  /** One blocking call, waiting for a ready backend up to the deadline. */
  public HelloReply sayHello(String name) {
    return stub.withWaitForReady()
        .withDeadlineAfter(deadline.toMillis(), TimeUnit.MILLISECONDS)
        .sayHello(HelloRequest.newBuilder().setName(name).build());
  }

  /**
   * One call without blocking, waiting for a ready backend up to the deadline; {@code done} gets
   * the reply or the error on a gRPC thread.
   */
  public void sayHelloAsync(String name, BiConsumer<HelloReply, Throwable> done) {
    asyncStub.withWaitForReady()
        .withDeadlineAfter(deadline.toMillis(), TimeUnit.MILLISECONDS)
        .sayHello(HelloRequest.newBuilder().setName(name).build(), new StreamObserver<HelloReply>() {
          @Override
          public void onNext(HelloReply reply) {
            done.accept(reply, null);
          }

          @Override
          public void onError(Throwable t) {
            done.accept(null, t);
          }

          @Override
          public void onCompleted() {}
        });
  }

  public ManagedChannel channel() {
    return channel;
  }

  @Override
  public void close() {
    channel.shutdownNow();
    try {
      channel.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Client settings; a setting given twice is refused ({@link IllegalStateException}). */
  public static final class Builder {
    private final String target;
    private String policy = DEFAULT_POLICY;
    private boolean retry = true;
    private boolean healthCheck = true;
    private String healthService = DEFAULT_HEALTH_SERVICE;
    @Nullable private BalancerMetrics metrics;
    private Duration deadline = Duration.ofMillis(DEFAULT_DEADLINE_MILLIS);

    private final Set<String> given = new HashSet<>();

    private Builder(String target) {
      this.target = target;
    }

    /** The project's rule for builders: a setting given twice is a mistake, refused at once. */
    private void once(String setting) {
      checkState(given.add(setting), "%s already set", setting);
    }

    /**
     * {@code weighted_random} (default), {@code weighted_round_robin_static}, {@code
     * weighted_least_request}, or any policy on the classpath.
     */
    public Builder policy(String policy) {
      once("policy");
      this.policy = requireNonNull(policy, "policy");
      return this;
    }

    /** A retry policy for calls that fail UNAVAILABLE (up to 5 attempts); default true. */
    public Builder retry(boolean retry) {
      once("retry");
      this.retry = retry;
      return this;
    }

    /** Client-side {@code grpc.health.v1} checking; default true. */
    public Builder healthCheck(boolean healthCheck) {
      once("healthCheck");
      this.healthCheck = healthCheck;
      return this;
    }

    /** The health service asked about; default {@code ""}, the overall status. */
    public Builder healthService(String healthService) {
      once("healthService");
      this.healthService = requireNonNull(healthService, "healthService");
      return this;
    }

    /** Meters for the channel's balancer and calls ({@link BalancerMetrics#configure}). */
    public Builder metrics(BalancerMetrics metrics) {
      once("metrics");
      this.metrics = requireNonNull(metrics, "metrics");
      return this;
    }

    public Builder deadline(Duration deadline) {
      once("deadline");
      checkArgument(!deadline.isNegative() && !deadline.isZero(), "deadline: %s (expected: > 0)", deadline);
      this.deadline = deadline;
      return this;
    }

    public GreeterClient build() {
      return new GreeterClient(this);
    }
  }
}
