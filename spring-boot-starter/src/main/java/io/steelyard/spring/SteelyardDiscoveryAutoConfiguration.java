package io.steelyard.spring;

import io.grpc.ManagedChannelBuilder;
import io.steelyard.discovery.EtcdNameResolverProvider;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.grpc.client.GrpcChannelBuilderCustomizer;

/**
 * Makes {@code etcd:///NAME} work as a Spring gRPC channel address, resolved from {@code
 * steelyard.etcd.*}: every channel that Spring gRPC's channel factory builds carries this
 * context's {@link EtcdNameResolverProvider} as a resolver argument ({@link
 * EtcdNameResolverProvider#CHANNEL_PROVIDER}), which the {@code etcd} provider grpc finds in its
 * registry hands the target to. Nothing is registered process-wide, so two application contexts
 * of one JVM (tests do that) each resolve against their own etcd and prefix.
 *
 * <p>The balancing policy is Spring gRPC's per-channel {@code default-load-balancing-policy}:
 * {@code weighted_random}, {@code weighted_round_robin_static} (or grpc's own; Spring gRPC's
 * default is {@code round_robin}, which ignores weights).
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
      SteelyardProperties properties, EtcdConnection etcd, KeyLayout layout) {
    return SteelyardSettings.resolverProvider(etcd, layout, properties.getDiscovery());
  }

  @Bean
  <T extends ManagedChannelBuilder<T>> GrpcChannelBuilderCustomizer<T> steelyardChannelBuilderCustomizer(
      EtcdNameResolverProvider provider) {
    return (target, builder) -> {
      try {
        builder.setNameResolverArg(EtcdNameResolverProvider.CHANNEL_PROVIDER, provider);
      } catch (UnsupportedOperationException e) {
        // A channel builder that takes no resolver arguments cannot resolve etcd: targets either.
        logger.debug("Channel {}: its builder takes no resolver arguments", target, e);
      }
    };
  }
}
