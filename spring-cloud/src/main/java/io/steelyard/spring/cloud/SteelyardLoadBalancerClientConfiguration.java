package io.steelyard.spring.cloud;

import org.springframework.cloud.client.ServiceInstance;
import org.springframework.cloud.loadbalancer.core.NoopServiceInstanceListSupplier;
import org.springframework.cloud.loadbalancer.core.ReactorLoadBalancer;
import org.springframework.cloud.loadbalancer.core.ServiceInstanceListSupplier;
import org.springframework.cloud.loadbalancer.support.LoadBalancerClientFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/**
 * What each Spring Cloud LoadBalancer client (one per service name, in its own child context)
 * gets by default: the registry's live instance list and {@link SteelyardLoadBalancer}. An
 * application replaces either per client with {@code @LoadBalancerClient(name = ...,
 * configuration = ...)}, as with any Spring Cloud LoadBalancer.
 */
@Configuration(proxyBeanMethods = false)
class SteelyardLoadBalancerClientConfiguration {

  @Bean
  ServiceInstanceListSupplier steelyardServiceInstanceListSupplier(
      Environment environment, WatchedServices watched) {
    String service = environment.getProperty(LoadBalancerClientFactory.PROPERTY_NAME);
    return watched.view(service)
        .<ServiceInstanceListSupplier>map(SteelyardServiceInstanceListSupplier::new)
        .orElseGet(() -> new NoopServiceInstanceListSupplier());
  }

  @Bean
  ReactorLoadBalancer<ServiceInstance> steelyardLoadBalancer(
      Environment environment, LoadBalancerClientFactory factory) {
    String service = environment.getProperty(LoadBalancerClientFactory.PROPERTY_NAME);
    return new SteelyardLoadBalancer(
        service, factory.getLazyProvider(service, ServiceInstanceListSupplier.class));
  }
}
