package io.steelyard.balancer;

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
import java.util.concurrent.atomic.AtomicReference;

/**
 * A name resolver for {@code SCHEME:///any} whose endpoint list the test changes while the channel
 * runs ({@link #update}), as the etcd watch does when a server registers: one channel at a time.
 */
final class UpdatableResolverProvider extends NameResolverProvider implements AutoCloseable {

  private final String scheme;
  private final AtomicReference<List<EquivalentAddressGroup>> endpoints;
  private final AtomicReference<NameResolver.Listener2> listener = new AtomicReference<>();
  private final AtomicReference<SynchronizationContext> syncContext = new AtomicReference<>();

  private UpdatableResolverProvider(String scheme, List<EquivalentAddressGroup> initial) {
    this.scheme = scheme;
    this.endpoints = new AtomicReference<>(List.copyOf(initial));
  }

  /** Registered in grpc's default registry until {@link #close()}; resolves to {@code initial}. */
  static UpdatableResolverProvider register(String scheme, List<EquivalentAddressGroup> initial) {
    UpdatableResolverProvider provider = new UpdatableResolverProvider(scheme, initial);
    NameResolverRegistry.getDefaultRegistry().register(provider);
    return provider;
  }

  String target() {
    return scheme + ":///service";
  }

  /** Delivers {@code next} to the running resolver, in the channel's SynchronizationContext. */
  void update(List<EquivalentAddressGroup> next) {
    endpoints.set(List.copyOf(next));
    syncContext.get().execute(() -> deliver(listener.get()));
  }

  private void deliver(NameResolver.Listener2 l) {
    l.onResult2(
        NameResolver.ResolutionResult.newBuilder()
            .setAddressesOrError(StatusOr.fromValue(endpoints.get()))
            .build());
  }

  @Override
  public void close() {
    NameResolverRegistry.getDefaultRegistry().deregister(this);
  }

  @Override
  public NameResolver newNameResolver(URI targetUri, NameResolver.Args args) {
    if (!scheme.equals(targetUri.getScheme())) {
      return null;
    }
    syncContext.set(args.getSynchronizationContext());
    return new NameResolver() {
      @Override
      public String getServiceAuthority() {
        return "localhost";
      }

      @Override
      public void start(Listener2 l) {
        listener.set(l);
        deliver(l);
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

  @Override
  protected int priority() {
    return 4;
  }

  @Override
  public Collection<Class<? extends SocketAddress>> getProducedSocketAddressTypes() {
    return List.of(InetSocketAddress.class);
  }
}
