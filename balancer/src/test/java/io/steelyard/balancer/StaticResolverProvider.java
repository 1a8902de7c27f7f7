package io.steelyard.balancer;

import io.grpc.EquivalentAddressGroup;
import io.grpc.NameResolver;
import io.grpc.NameResolverProvider;
import io.grpc.StatusOr;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.URI;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A resolver for {@code static-weighted:///NAME} targets that returns a fixed list of weighted
 * endpoints registered by the test; stands in for the etcd resolver, which is built elsewhere.
 */
final class StaticResolverProvider extends NameResolverProvider {

  static final String SCHEME = "static-weighted";

  private final Map<String, List<EquivalentAddressGroup>> targets = new ConcurrentHashMap<>();

  /** Registers {@code endpoints} under {@code name}; returns the channel target. */
  String register(String name, List<EquivalentAddressGroup> endpoints) {
    targets.put(name, List.copyOf(endpoints));
    return SCHEME + ":///" + name;
  }

  @Override
  public NameResolver newNameResolver(URI targetUri, NameResolver.Args args) {
    if (!SCHEME.equals(targetUri.getScheme())) {
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
    return SCHEME;
  }

  @Override
  protected boolean isAvailable() {
    return true;
  }

  @Override
  protected int priority() {
    return 5;
  }

  @Override
  public Collection<Class<? extends SocketAddress>> getProducedSocketAddressTypes() {
    return List.of(InetSocketAddress.class);
  }
}
