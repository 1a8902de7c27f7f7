package io.steelyard.discovery;

import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.NameResolver;
import io.grpc.NameResolver.ConfigOrError;
import io.grpc.NameResolverProvider;
import io.grpc.Status;
import io.steelyard.registry.ServiceConfigJson;
import io.steelyard.registry.admin.ServiceConfigStore;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.URI;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Checks a service config with the very parser a channel uses on what its resolver hands it:
 * grpc's {@code NameResolver.Args.getServiceConfigParser()} of a real (never connected) channel,
 * which parses the method configs, retry and health-check settings and, for {@code
 * loadBalancingConfig}, picks the first registered policy and runs its provider's {@code
 * parseLoadBalancingPolicyConfig} (for steelyard's policies, the balancer module's own parser).
 * A config this check accepts is therefore one every client of the same grpc and steelyard
 * accepts: {@code steelyard config set|validate} check with it, and {@code steelyard-xds} serves
 * only a stored config it accepts.
 *
 * <pre>{@code
 * ChannelConfigCheck check = ChannelConfigCheck.create();
 * check.check(ServiceConfigJson.parse(json)); // IllegalArgumentException with the parser's reason
 * }</pre>
 *
 * <p>Needs a gRPC transport on the class path (grpc-netty, which jetcd brings). Thread-safe.
 */
public final class ChannelConfigCheck implements ServiceConfigStore.Check {

  private static final String SCHEME = "steelyard-config-check";

  private final NameResolver.ServiceConfigParser parser;

  private ChannelConfigCheck(NameResolver.ServiceConfigParser parser) {
    this.parser = parser;
  }

  /** The parser of a channel built for the purpose, then shut down. */
  @SuppressWarnings("deprecation") // nameResolverFactory: the one public way to see a channel's Args
  public static ChannelConfigCheck create() {
    AtomicReference<NameResolver.ServiceConfigParser> found = new AtomicReference<>();
    NameResolverProvider capture = new NameResolverProvider() {
      @Override
      public NameResolver newNameResolver(URI targetUri, NameResolver.Args args) {
        found.set(args.getServiceConfigParser());
        return new NameResolver() {
          @Override
          public String getServiceAuthority() {
            return "config-check";
          }

          @Override
          public void start(Listener2 listener) {}

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
        return 0;
      }

      @Override
      public Collection<Class<? extends SocketAddress>> getProducedSocketAddressTypes() {
        return List.of(InetSocketAddress.class);
      }
    };
    // grpc makes the channel's resolver in the channel's constructor: the parser is there now.
    ManagedChannel channel = ManagedChannelBuilder.forTarget(SCHEME + ":///check")
        .nameResolverFactory(capture)
        .usePlaintext()
        .build();
    channel.shutdownNow();
    if (found.get() == null) {
      throw new IllegalStateException("grpc built a channel without asking for its resolver");
    }
    return new ChannelConfigCheck(found.get());
  }

  /** The parser's answer: the parsed config, or the error it refuses {@code config} with. */
  public ConfigOrError parse(Map<String, ?> config) {
    return parser.parseServiceConfig(config);
  }

  @Override
  public void check(Map<String, ?> config) {
    ConfigOrError parsed = parser.parseServiceConfig(config);
    Status error = parsed.getError();
    if (error != null) {
      throw new IllegalArgumentException("service config refused: " + ServiceConfigJson.refusal(error));
    }
  }
}
