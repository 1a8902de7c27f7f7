package io.steelyard.spring;

import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * The etcd this application talks to: one {@link EtcdConnection} and one {@link KeyLayout} from
 * {@code steelyard.etcd.*}, shared by the registration and every {@code etcd:///} channel. Either
 * can be replaced by a bean of the application's own.
 *
 * <p>An {@code EtcdConnection} is a value, not a connection: the jetcd clients made from it belong
 * to their users (the registration's own, the discovery watchers', the actuator endpoint's) and
 * are closed when those stop with the context.
 */
@AutoConfiguration
@EnableConfigurationProperties(SteelyardProperties.class)
public final class SteelyardEtcdAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean
  EtcdConnection steelyardEtcdConnection(SteelyardProperties properties) {
    return SteelyardSettings.connection(properties.getEtcd());
  }

  @Bean
  @ConditionalOnMissingBean
  KeyLayout steelyardKeyLayout(SteelyardProperties properties) {
    return SteelyardSettings.layout(properties.getEtcd());
  }
}
