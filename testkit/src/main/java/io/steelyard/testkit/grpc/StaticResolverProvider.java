package io.steelyard.testkit.grpc;

import static com.google.common.base.Preconditions.checkArgument;
import static java.util.Objects.requireNonNull;

import io.grpc.EquivalentAddressGroup;
import io.grpc.NameResolver;
import io.grpc.NameResolverProvider;
import io.grpc.NameResolverRegistry;
import io.grpc.StatusOr;
import io.grpc.SynchronizationContext;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.URI;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import javax.annotation.Nullable;

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
 * <p>Each resolver started for a name delivers that name's list as registered at the time the
 * channel starts resolving, and again whenever the test {@linkplain #update updates} the name, as
 * the etcd watch does when a server registers; each delivery runs in the channel's
 * {@link SynchronizationContext}, as a real resolver's. It produces {@link InetSocketAddress}es.
 * Thread-safe.
 *
 * <pre>{@code
 * String target = resolver.target("greeter", List.of(a, b));
 * ManagedChannel channel = ...;                    // resolves to a and b
 * resolver.update("greeter", List.of(a, b, c));    // every running resolver of "greeter" gets c
 * }</pre>
 */
public final class StaticResolverProvider extends NameResolverProvider implements AutoCloseable {

  private final String scheme;
  private final NameResolverRegistry registry;
  private final Map<String, List<EquivalentAddressGroup>> targets = new ConcurrentHashMap<>();
  private final Map<String, Set<Running>> running = new ConcurrentHashMap<>();

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

  /**
   * Replaces the endpoints of {@code name} and delivers them to every running resolver of it, each
   * in its channel's synchronization context; channels that start resolving later get them too.
   *
   * @throws IllegalArgumentException if {@code name} was never registered with {@link #target}
   */
  public void update(String name, List<EquivalentAddressGroup> endpoints) {
    List<EquivalentAddressGroup> next = List.copyOf(endpoints);
    checkArgument(targets.replace(requireNonNull(name, "name"), next) != null,
        "name: %s (expected: registered with target())", name);
    for (Running r : running.getOrDefault(name, Set.of())) {
      r.syncContext.execute(() -> r.deliver(targets.get(name)));
    }
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
    String name = targetUri.getPath().substring(1);
    if (!targets.containsKey(name)) {
      return null;
    }
    return new Running(name, args.getSynchronizationContext());
  }

  /** One channel's resolver of a name; delivers in the channel's synchronization context. */
  private final class Running extends NameResolver {
    final String name;
    final SynchronizationContext syncContext;
    @Nullable private Listener2 listener; // set in start(), in the synchronization context

    Running(String name, SynchronizationContext syncContext) {
      this.name = name;
      this.syncContext = syncContext;
    }

    @Override
    public String getServiceAuthority() {
      return "localhost";
    }

    @Override
    public void start(Listener2 listener) {
      this.listener = listener;
      running.computeIfAbsent(name, n -> ConcurrentHashMap.newKeySet()).add(this);
      deliver(targets.get(name));
    }

    /** In the synchronization context. */
    void deliver(List<EquivalentAddressGroup> endpoints) {
      if (listener != null) {
        listener.onResult2(
            ResolutionResult.newBuilder()
                .setAddressesOrError(StatusOr.fromValue(endpoints))
                .build());
      }
    }

    @Override
    public void shutdown() {
      listener = null;
      Set<Running> of = running.get(name);
      if (of != null) {
        of.remove(this);
      }
    }
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
