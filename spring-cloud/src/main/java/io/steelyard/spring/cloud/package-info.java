/**
 * Spring Cloud over the steelyard registry: {@code DiscoveryClient} and {@code
 * ReactiveDiscoveryClient} fed live by an etcd watch, {@code ServiceRegistry} and the automatic
 * registration of the application's HTTP server (following readiness), and a Spring Cloud
 * LoadBalancer that chooses by weight. Everything is configured by {@code
 * SteelyardCloudDiscoveryAutoConfiguration} and {@code SteelyardCloudRegistrationAutoConfiguration}
 * from the starter's {@code steelyard.*} properties and {@link
 * io.steelyard.spring.cloud.SteelyardCloudProperties}; see {@code docs/spring-cloud.md}.
 */
package io.steelyard.spring.cloud;
