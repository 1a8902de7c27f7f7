package io.steelyard.spring;

import io.grpc.ManagedChannelBuilder;
import io.steelyard.discovery.EtcdNameResolverProvider;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;
import org.springframework.grpc.client.GrpcChannelBuilderCustomizer;

/**
 * Makes {@code etcd:///NAME} work as a Spring gRPC channel address, resolved from {@code
 * steelyard.etcd.*}: every channel that Spring gRPC's channel factory builds carries this
 * context's {@link EtcdNameResolverProvider} as a resolver argument ({@link
 * EtcdNameResolverProvider#CHANNEL_PROVIDER}), which the {@code etcd} provider grpc finds in its
 * registry hands the target to. Nothing is registered process-wide, so two application contexts
 * of one JVM (tests do that) each resolve against their own etcd and prefix.
 *
 * <p>The balancing policy: the service config stored in the registry ({@code steelyard config
 * set}) when there is one; else the channel's {@code default-load-balancing-policy} when the
 * application sets it ({@code spring.grpc.client.channels.NAME.} or {@code default-channel.}),
 * handed to the resolver as its fallback ({@link EtcdNameResolverProvider#FALLBACK_SERVICE_CONFIG});
 * else the resolver's {@code weighted_random}. Spring gRPC's own default, {@code round_robin},
 * which ignores weights, never applies to an {@code etcd:} channel: grpc ranks the resolver's
 * config above a channel's default policy.
 */
@AutoConfiguration(
    after = SteelyardEtcdAutoConfiguration.class,
    beforeName = "org.springframework.boot.grpc.client.autoconfigure.GrpcClientAutoConfiguration")
@ConditionalOnClass(GrpcChannelBuilderCustomizer.class)
@ConditionalOnBooleanProperty(name = "steelyard.discovery.enabled", matchIfMissing = true)
public final class SteelyardDiscoveryAutoConfiguration {

  private static final Logger logger = LoggerFactory.getLogger(SteelyardDiscoveryAutoConfiguration.class);

  @Bean
  @ConditionalOnMissingBean
  EtcdNameResolverProvider steelyardNameResolverProvider(
      SteelyardProperties properties, EtcdConnection etcd, KeyLayout layout, Environment environment) {
    return SteelyardSettings.resolverProvider(etcd, layout, properties.getDiscovery(), environment::getProperty);
  }

  @Bean
  <T extends ManagedChannelBuilder<T>> GrpcChannelBuilderCustomizer<T> steelyardChannelBuilderCustomizer(
      EtcdNameResolverProvider provider, Environment environment) {
    Binder binder = Binder.get(environment);
    return (target, builder) -> {
      try {
        builder.setNameResolverArg(EtcdNameResolverProvider.CHANNEL_PROVIDER, provider);
        String policy = binder.bind("spring.grpc.client.channels." + target + ".default-load-balancing-policy", String.class)
            .orElseGet(() -> binder.bind("spring.grpc.client.default-channel.default-load-balancing-policy", String.class)
                .orElse(null));
        if (policy != null && !policy.isBlank()) {
          // The application's own choice stays its fallback; only Spring's implicit default yields.
          builder.setNameResolverArg(EtcdNameResolverProvider.FALLBACK_SERVICE_CONFIG,
              Map.of("loadBalancingConfig", List.of(Map.of(policy.strip(), Map.of()))));
        }
      } catch (UnsupportedOperationException e) {
        // A channel builder that takes no resolver arguments cannot resolve etcd: targets either.
        logger.debug("Channel {}: its builder takes no resolver arguments", target, e);
      }
    };
  }
}
