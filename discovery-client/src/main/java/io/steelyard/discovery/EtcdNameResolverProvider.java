package io.steelyard.discovery;

import static com.google.common.base.Preconditions.checkState;
import static java.util.Objects.requireNonNull;

import io.grpc.LoadBalancerRegistry;
import io.grpc.NameResolver;
import io.grpc.NameResolverProvider;
import io.grpc.Status;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.registry.Localities;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;
import javax.annotation.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code etcd} name resolver scheme for grpc-java.
 *
 * <pre>{@code
 * // etcd from STEELYARD_ETCD_ENDPOINTS, else http://127.0.0.1:2379 (the META-INF/services instance)
 * ManagedChannel ch = ManagedChannelBuilder.forTarget("etcd:///greeter")
 *     .defaultLoadBalancingPolicy("weighted_random").usePlaintext().build();
 * // etcd named in the target (plain HTTP): several members, or one
 * ManagedChannelBuilder.forTarget("etcd:///greeter?endpoints=10.0.0.1:2379,10.0.0.2:2379");
 * ManagedChannelBuilder.forTarget("etcd://10.0.0.1:2379/greeter");
 * // programmatic: auth/TLS/prefix, registered above the default instance
 * NameResolverRegistry.getDefaultRegistry().register(EtcdNameResolverProvider.builder()
 *     .connection(EtcdConnection.builder().endpoints("https://etcd:2379").tls(ca, null, null).build())
 *     .layout(KeyLayout.of("/prod/services")).build());   // priority 4: above the default instance
 * // per channel, touching no process-wide registry (how the Spring Boot starter keeps two
 * // application contexts of one JVM apart):
 * ManagedChannelBuilder.forTarget("etcd:///greeter")
 *     .setNameResolverArg(EtcdNameResolverProvider.CHANNEL_PROVIDER, configuredProvider);
 * }</pre>
 *
 * <p>Every channel of the process naming the same etcd, layout and service shares one watch of
 * its instances and one of its service config ({@code <prefix>/.config/<service>}, set with
 * {@code steelyard config set}), which each result hands grpc as the service config, as grpc's
 * DNS resolver does with TXT records; see {@link #FALLBACK_SERVICE_CONFIG} for a service without one.
 *
 * <p><b>The caller's zone</b>, for zone-aware routing ({@code docs/localities.md}): the target's
 * {@code ?zone=} ({@code etcd:///greeter?zone=eu-1a}), else the provider's {@link Builder#zone},
 * else the environment variable {@value Localities#ZONE_ENV}, read once when the provider is
 * made. The resolver hands it to the balancer as the {@link Localities#CALLER_ZONE} attribute of
 * every resolution; none of them set, the attribute is absent and balancing is zone-blind.
 *
 * <p>Addresses carry their weight and metadata ({@link io.steelyard.registry.EndpointWeights}).
 * This provider never throws: a target it cannot serve yields a resolver that fails the
 * channel's calls with a status naming the target and the expected form.
 */
public final class EtcdNameResolverProvider extends NameResolverProvider {

  private static final Logger logger = LoggerFactory.getLogger(EtcdNameResolverProvider.class);

  /** The URI scheme served. */
  public static final String SCHEME = "etcd";

  /**
   * Priority of the {@code META-INF/services} instance. Below {@link #CONFIGURED_PRIORITY}, so a
   * programmatically registered provider wins for {@code etcd:}; and below grpc's DNS provider
   * (5), because grpc takes the highest-priority provider's scheme as the default for targets
   * without one: at 5 or more a bare {@code host:port} target could be sent to etcd.
   */
  public static final int DEFAULT_PRIORITY = 3;

  /** Default priority of a provider made with {@link #builder()}; the highest allowed. */
  public static final int CONFIGURED_PRIORITY = 4;

  /**
   * Gives one channel its own etcd connection (other credentials, certificates or cluster) for
   * an {@code etcd:///SERVICE} target, instead of the provider's:
   *
   * <pre>{@code
   * ManagedChannelBuilder.forTarget("etcd:///billing")
   *     .setNameResolverArg(EtcdNameResolverProvider.CONNECTION, EtcdConnection.builder()
   *         .endpoints("https://billing-etcd:2379").tls(ca, cert, key).build())
   *     .build();
   * }</pre>
   *
   * Channels given equal connections share one client and watch. A target that names its own
   * endpoints ({@code etcd://host:port/SERVICE}) together with this argument is refused: the
   * endpoints would be in two places.
   */
  public static final NameResolver.Args.Key<EtcdConnection> CONNECTION =
      NameResolver.Args.Key.create("io.steelyard.discovery.EtcdConnection");

  /**
   * A channel's own provider for its {@code etcd:} target: whichever {@code etcd} provider grpc
   * picks from the registry (the {@code META-INF/services} instance, or one registered
   * programmatically) hands the target to the provider set under this key with {@code
   * ManagedChannelBuilder.setNameResolverArg}, so that channels of one process can resolve
   * against different etcd clusters, credentials or key layouts without a process-wide
   * registration. Unlike {@link #CONNECTION} it carries the key layout and the watcher timings
   * too (the Spring Boot starter sets it on every channel of an application context). {@code
   * nameResolverFactory} cannot do this: grpc resolves the target's provider from the default
   * registry when the builder is created, and that choice wins.
   */
  public static final NameResolver.Args.Key<EtcdNameResolverProvider> CHANNEL_PROVIDER =
      NameResolver.Args.Key.create("io.steelyard.discovery.channelProvider");

  /**
   * The policy of the resolver's fallback service config, {@value}: what a channel gets while
   * the registry holds no config for its service, when the balancer module provides the policy.
   */
  public static final String FALLBACK_POLICY = "weighted_random";

  /**
   * The service config a channel's resolver hands grpc while the registry holds none for the
   * service (no key under {@code <prefix>/.config/<service>}, or none grpc accepted yet). Default:
   * {@code {"loadBalancingConfig":[{"weighted_random":{}}]}} when the {@value #FALLBACK_POLICY}
   * policy is registered (the balancer module is on the class path), else none. An empty map
   * means none: grpc's own rule then applies, the channel's {@code defaultServiceConfig}, then
   * its {@code defaultLoadBalancingPolicy}, then {@code pick_first}.
   *
   * <pre>{@code
   * // this channel's own default service config is its fallback, not weighted_random
   * ManagedChannelBuilder.forTarget("etcd:///greeter")
   *     .defaultServiceConfig(mine)
   *     .setNameResolverArg(EtcdNameResolverProvider.FALLBACK_SERVICE_CONFIG, Map.of());
   * }</pre>
   *
   * grpc ranks any config from the resolver above the channel's defaults, so without this
   * argument the fallback also wins over the channel's {@code defaultServiceConfig} and {@code
   * defaultLoadBalancingPolicy} (Spring gRPC's {@code round_robin} default among them); only
   * {@code disableServiceConfigLookUp()} puts the channel's settings above everything the
   * resolver sends. docs/balancer.md has the whole order.
   */
  public static final NameResolver.Args.Key<Map<String, ?>> FALLBACK_SERVICE_CONFIG =
      NameResolver.Args.Key.create("io.steelyard.discovery.fallbackServiceConfig");

  private static final Map<String, ?> DEFAULT_FALLBACK =
      Map.of("loadBalancingConfig", List.of(Map.of(FALLBACK_POLICY, Map.of())));

  @Nullable private final EtcdConnection connection;
  @Nullable private final String zone;
  private final KeyLayout layout;
  private final int priority;
  private final WatcherConfig config;

  /** The instance listed in {@code META-INF/services}: etcd from the environment, default layout. */
  public EtcdNameResolverProvider() {
    this(null, KeyLayout.defaults(), DEFAULT_PRIORITY, WatcherConfig.DEFAULTS,
        zoneFrom(System::getenv));
  }

  private EtcdNameResolverProvider(
      @Nullable EtcdConnection connection,
      KeyLayout layout,
      int priority,
      WatcherConfig config,
      @Nullable String zone) {
    this.connection = connection;
    this.zone = zone;
    this.layout = layout;
    this.priority = priority;
    this.config = config;
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * The caller's zone from {@code environment}'s {@value Localities#ZONE_ENV}, or null when unset
   * or empty; an invalid value is ignored with a logged warning (a provider never throws).
   */
  static String zoneFrom(Function<String, String> environment) {
    String value = environment.apply(Localities.ZONE_ENV);
    if (value == null || value.isEmpty()) {
      return null;
    }
    try {
      return Localities.checkName(Localities.ZONE_ENV, value);
    } catch (IllegalArgumentException e) {
      logger.warn("Ignoring the caller zone: {}", e.getMessage());
      return null;
    }
  }

  @Override
  protected boolean isAvailable() {
    return true;
  }

  @Override
  protected int priority() {
    return priority;
  }

  @Override
  public String getDefaultScheme() {
    return SCHEME;
  }

  @Override
  public Collection<Class<? extends SocketAddress>> getProducedSocketAddressTypes() {
    return List.of(InetSocketAddress.class);
  }

  @Override
  @Nullable
  public NameResolver newNameResolver(URI targetUri, NameResolver.Args args) {
    if (targetUri == null || !SCHEME.equals(targetUri.getScheme())) {
      return null;
    }
    EtcdNameResolverProvider channelProvider = args.getArg(CHANNEL_PROVIDER);
    if (channelProvider != null && channelProvider != this) {
      return channelProvider.newNameResolver(targetUri, args);
    }
    String path = targetUri.getPath();
    String authority = path != null && path.startsWith("/") && path.length() > 1
        ? path.substring(1) : String.valueOf(targetUri.getSchemeSpecificPart());
    try {
      EtcdConnection own = args.getArg(CONNECTION);
      Supplier<EtcdConnection> defaults =
          () -> own != null ? own : connection != null ? connection : EtcdConnection.fromEnvironment();
      EtcdTarget target = EtcdTarget.parse(targetUri, defaults);
      if (own != null && !own.equals(target.connection())) {
        throw new IllegalArgumentException(
            "target " + targetUri + " names its etcd endpoints and the channel sets "
                + "EtcdNameResolverProvider.CONNECTION; give etcd in one place (etcd:///"
                + target.service() + " with the argument)");
      }
      String description = "service " + target.service() + " at etcd " + target.connection().endpointsString();
      return new EtcdNameResolver(
          target.service(),
          description,
          listener -> WatchRegistry.SHARED.subscribe(
              target.connection(), layout, target.service(), config, listener),
          args.getSynchronizationContext(),
          args.getOffloadExecutor(),
          args.getServiceConfigParser(),
          fallbackConfig(args),
          target.zone() != null ? target.zone() : zone);
    } catch (RuntimeException e) {
      logger.warn("Invalid etcd target {}: {}", targetUri, e.getMessage());
      return EtcdNameResolver.failing(
          authority,
          Status.INVALID_ARGUMENT.withDescription(e.getMessage()).withCause(e),
          args.getSynchronizationContext());
    }
  }

  /** The channel's {@link #FALLBACK_SERVICE_CONFIG}, or the default. */
  @Nullable
  private static Map<String, ?> fallbackConfig(NameResolver.Args args) {
    Map<String, ?> own = args.getArg(FALLBACK_SERVICE_CONFIG);
    if (own != null) {
      return own;
    }
    return LoadBalancerRegistry.getDefaultRegistry().getProvider(FALLBACK_POLICY) != null
        ? DEFAULT_FALLBACK : null;
  }

  /** Configuration of a programmatically registered provider; each setting at most once. */
  public static final class Builder {
    @Nullable private EtcdConnection connection;
    @Nullable private KeyLayout layout;
    private int priority = CONFIGURED_PRIORITY;
    private boolean prioritySet;
    private WatcherConfig config = WatcherConfig.DEFAULTS;
    private boolean debounceSet;
    private boolean relistSet;
    private boolean backoffSet;
    @Nullable private String zone;
    @Nullable private Function<String, String> environment;

    private Builder() {}

    /**
     * Where the default zone ({@value Localities#ZONE_ENV}) is read when {@link #zone} is not
     * given: a variable's value, or null when unset; default {@code System::getenv}.
     */
    public Builder environment(Function<String, String> environment) {
      checkState(this.environment == null, "environment already set");
      this.environment = requireNonNull(environment, "environment");
      return this;
    }

    /**
     * The caller's zone for targets without {@code ?zone=}; default: {@value
     * Localities#ZONE_ENV} from the environment, else none (zone-blind).
     */
    public Builder zone(String zone) {
      checkState(this.zone == null, "zone already set");
      this.zone = Localities.checkName("zone", zone);
      return this;
    }

    /** etcd for {@code etcd:///SERVICE} targets; default: from {@code STEELYARD_ETCD_ENDPOINTS}. */
    public Builder connection(EtcdConnection connection) {
      checkState(this.connection == null, "connection already set");
      this.connection = requireNonNull(connection, "connection");
      return this;
    }

    /** Key layout; default {@link KeyLayout#defaults()}. */
    public Builder layout(KeyLayout layout) {
      checkState(this.layout == null, "layout already set");
      this.layout = requireNonNull(layout, "layout");
      return this;
    }

    /**
     * Provider priority, 0..{@value #CONFIGURED_PRIORITY} (default {@value #CONFIGURED_PRIORITY},
     * above the {@code META-INF/services} instance's {@value #DEFAULT_PRIORITY}). 5 and above are
     * refused: grpc would then make {@code etcd} the default scheme of targets that name none.
     */
    public Builder priority(int priority) {
      checkState(!prioritySet, "priority already set");
      if (priority < 0 || priority > CONFIGURED_PRIORITY) {
        throw new IllegalArgumentException(
            "priority: " + priority + " (expected: 0.." + CONFIGURED_PRIORITY
                + ", below DNS's 5 so targets without a scheme stay DNS)");
      }
      this.priority = priority;
      prioritySet = true;
      return this;
    }

    /** Coalescing window; see {@link ServiceWatcher.Builder#debounce}. */
    public Builder debounce(Duration debounce) {
      checkState(!debounceSet, "debounce already set");
      config = config.withDebounce(requireNonNull(debounce, "debounce"));
      debounceSet = true;
      return this;
    }

    /** Safety-net re-list interval; see {@link ServiceWatcher.Builder#relistInterval}. */
    public Builder relistInterval(Duration interval) {
      checkState(!relistSet, "relistInterval already set");
      config = config.withRelistInterval(requireNonNull(interval, "interval"));
      relistSet = true;
      return this;
    }

    /** Retry backoff; see {@link ServiceWatcher.Builder#backoff}. */
    public Builder backoff(Duration initial, Duration max) {
      checkState(!backoffSet, "backoff already set");
      config = config.withBackoff(requireNonNull(initial, "initial"), requireNonNull(max, "max"));
      backoffSet = true;
      return this;
    }

    public EtcdNameResolverProvider build() {
      return new EtcdNameResolverProvider(
          connection,
          layout == null ? KeyLayout.defaults() : layout,
          priority,
          config,
          zone != null ? zone : zoneFrom(environment != null ? environment : System::getenv));
    }
  }
}
