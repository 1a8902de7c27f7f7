package io.steelyard.testkit.grpc;

import static java.util.Objects.requireNonNull;

import io.grpc.EquivalentAddressGroup;
import io.grpc.NameResolver;
import io.grpc.NameResolverProvider;
import io.grpc.NameResolverRegistry;
import io.grpc.StatusOr;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.URI;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A name resolver for {@code SCHEME:///NAME} targets that answers with a fixed list of endpoints
 * (weighted or not) registered by the test: a stand-in for DNS or the etcd resolver when the test
 * is about what happens after resolution.
 *
 * <pre>{@code
 * try (StaticResolverProvider resolver = StaticResolverProvider.register("static-test")) {
 *   String target = resolver.target("greeter", List.of(
 *       EndpointWeights.withWeight(new EquivalentAddressGroup(serverAddress), 5)));
 *   ManagedChannel channel = Grpc.newChannelBuilder(target, InsecureChannelCredentials.create())
 *       .defaultLoadBalancingPolicy("weighted_random").build();
 * }
 * }</pre>
 *
 * <p>Each resolver started for a name delivers that name's list once, as registered at the time
 * the channel starts resolving. It produces {@link InetSocketAddress}es. Thread-safe.
 */
public final class StaticResolverProvider extends NameResolverProvider implements AutoCloseable {

  private final String scheme;
  private final NameResolverRegistry registry;
  private final Map<String, List<EquivalentAddressGroup>> targets = new ConcurrentHashMap<>();

  private StaticResolverProvider(String scheme, NameResolverRegistry registry) {
    this.scheme = requireNonNull(scheme, "scheme");
    this.registry = registry;
  }

  /**
   * A provider for {@code scheme}, registered in grpc's default {@link NameResolverRegistry}
   * until {@link #close()}. Use a scheme no other test class uses at the same time.
   */
  public static StaticResolverProvider register(String scheme) {
    NameResolverRegistry registry = NameResolverRegistry.getDefaultRegistry();
    StaticResolverProvider provider = new StaticResolverProvider(scheme, registry);
    registry.register(provider);
    return provider;
  }

  /** Registers {@code endpoints} under {@code name}; returns the channel target {@code SCHEME:///NAME}. */
  public String target(String name, List<EquivalentAddressGroup> endpoints) {
    targets.put(requireNonNull(name, "name"), List.copyOf(endpoints));
    return scheme + ":///" + name;
  }

  /** Removes this provider from the registry; channels already built keep their resolvers. */
  @Override
  public void close() {
    registry.deregister(this);
  }

  @Override
  public NameResolver newNameResolver(URI targetUri, NameResolver.Args args) {
    if (!scheme.equals(targetUri.getScheme()) || targetUri.getPath() == null) {
      return null;
    }
    List<EquivalentAddressGroup> endpoints = targets.get(targetUri.getPath().substring(1));
    if (endpoints == null) {
      return null;
    }
    return new NameResolver() {
      @Override
      public String getServiceAuthority() {
        return "localhost";
      }

      @Override
      public void start(Listener2 listener) {
        listener.onResult2(
            ResolutionResult.newBuilder()
                .setAddressesOrError(StatusOr.fromValue(endpoints))
                .build());
      }

      @Override
      public void shutdown() {}
    };
  }

  @Override
  public String getDefaultScheme() {
    return scheme;
  }

  @Override
  protected boolean isAvailable() {
    return true;
  }

  /**
   * Below DNS's 5, so a test that registers this provider never becomes the default scheme of
   * targets written without one ({@code localhost:8080} stays DNS).
   */
  @Override
  protected int priority() {
    return 4;
  }

  @Override
  public Collection<Class<? extends SocketAddress>> getProducedSocketAddressTypes() {
    return List.of(InetSocketAddress.class);
  }
}
