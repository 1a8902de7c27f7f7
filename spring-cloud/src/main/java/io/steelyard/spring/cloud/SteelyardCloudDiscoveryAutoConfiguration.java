package io.steelyard.spring.cloud;

import io.steelyard.balancer.spi.SlowStartConfig;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.KeyLayout;
import io.steelyard.spring.SteelyardEtcdAutoConfiguration;
import io.steelyard.spring.SteelyardProperties;
import java.time.Duration;
import javax.annotation.Nullable;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.cloud.client.ConditionalOnBlockingDiscoveryEnabled;
import org.springframework.cloud.client.ConditionalOnDiscoveryEnabled;
import org.springframework.cloud.client.ConditionalOnReactiveDiscoveryEnabled;
import org.springframework.cloud.client.discovery.DiscoveryClient;
import org.springframework.cloud.client.discovery.ReactiveDiscoveryClient;
import org.springframework.cloud.loadbalancer.annotation.LoadBalancerClients;
import org.springframework.cloud.loadbalancer.support.LoadBalancerClientFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Spring Cloud discovery over the registry: a {@link DiscoveryClient} and a {@link
 * ReactiveDiscoveryClient} (each unless Spring Cloud's own switches turn that kind off), and
 * with Spring Cloud LoadBalancer on the classpath, {@link SteelyardLoadBalancerClientConfiguration}
 * as every load-balanced client's default: the registry's live list and a choice by weight.
 * Off with {@code steelyard.cloud.discovery.enabled=false} or {@code
 * spring.cloud.discovery.enabled=false}.
 */
@AutoConfiguration(
    after = SteelyardEtcdAutoConfiguration.class,
    beforeName = {
      "org.springframework.cloud.client.discovery.simple.SimpleDiscoveryClientAutoConfiguration",
      "org.springframework.cloud.client.discovery.simple.reactive.SimpleReactiveDiscoveryClientAutoConfiguration",
      "org.springframework.cloud.client.discovery.composite.CompositeDiscoveryClientAutoConfiguration",
      "org.springframework.cloud.client.discovery.composite.reactive.ReactiveCompositeDiscoveryClientAutoConfiguration",
      "org.springframework.cloud.loadbalancer.config.LoadBalancerAutoConfiguration"
    })
@ConditionalOnDiscoveryEnabled
@ConditionalOnBooleanProperty(name = "steelyard.cloud.discovery.enabled", matchIfMissing = true)
@EnableConfigurationProperties(SteelyardCloudProperties.class)
public final class SteelyardCloudDiscoveryAutoConfiguration {

  @Bean(destroyMethod = "close")
  WatchedServices steelyardWatchedServices(
      EtcdConnection etcd, KeyLayout layout, SteelyardProperties steelyard,
      SteelyardCloudProperties cloud) {
    Duration timeout = cloud.getDiscovery().getFirstListTimeout();
    if (timeout == null || timeout.isNegative()) {
      throw new IllegalArgumentException(
          "steelyard.cloud.discovery.first-list-timeout: " + timeout + " (expected: >= 0)");
    }
    return new WatchedServices(etcd, layout, steelyard.getDiscovery().getDebounce(),
        steelyard.getDiscovery().getRelistInterval(), slowStart(cloud.getLoadbalancer().getSlowStart()),
        timeout, System::nanoTime);
  }

  @Nullable
  static SlowStartConfig slowStart(SteelyardCloudProperties.SlowStart s) {
    Duration window = s.getWindow();
    if (window == null || window.isZero()) {
      return null;
    }
    if (window.isNegative()) {
      throw new IllegalArgumentException(
          "steelyard.cloud.loadbalancer.slow-start.window: " + window + " (expected: > 0s)");
    }
    try {
      return new SlowStartConfig(window.toNanos(), s.getAggression(), s.getMinWeightPercent());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("steelyard.cloud.loadbalancer.slow-start." + e.getMessage(), e);
    }
  }

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnBlockingDiscoveryEnabled
  static class Blocking {
    @Bean
    DiscoveryClient steelyardDiscoveryClient(WatchedServices watched) {
      return new SteelyardDiscoveryClient(watched);
    }
  }

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnReactiveDiscoveryEnabled
  static class Reactive {
    @Bean
    ReactiveDiscoveryClient steelyardReactiveDiscoveryClient(WatchedServices watched) {
      return new SteelyardReactiveDiscoveryClient(watched);
    }
  }

  /** The weighted, live load balancer as the default of every Spring Cloud LoadBalancer client. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(LoadBalancerClientFactory.class)
  @ConditionalOnBooleanProperty(name = "steelyard.cloud.loadbalancer.enabled", matchIfMissing = true)
  @LoadBalancerClients(defaultConfiguration = SteelyardLoadBalancerClientConfiguration.class)
  static class LoadBalancing {}
}
