package io.steelyard.spring.actuate;

import io.micrometer.core.instrument.binder.MeterBinder;
import io.steelyard.discovery.DiscoveryMetrics;
import io.steelyard.registry.CertificateMetrics;
import io.steelyard.spring.GrpcServerRegistration;
import io.steelyard.spring.SteelyardRegistrationAutoConfiguration;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * steelyard's meters when Micrometer is on the classpath: the discovery client's own {@link
 * DiscoveryMetrics} (unless the application declares one: one binder, one definition of each
 * meter), {@link CertificateMetrics} for the etcd connection's TLS files, and {@link
 * SteelyardMeterBinder} for the registration and the rest.
 */
@AutoConfiguration(after = SteelyardRegistrationAutoConfiguration.class)
@ConditionalOnClass(MeterBinder.class)
public final class SteelyardMetricsAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean
  SteelyardMeterBinder steelyardMeterBinder(ObjectProvider<GrpcServerRegistration> registration) {
    return new SteelyardMeterBinder(registration.getIfAvailable());
  }

  /** Closed with the context (it is {@link AutoCloseable}): its meters go with it. */
  @Bean
  @ConditionalOnMissingBean
  DiscoveryMetrics steelyardDiscoveryMetrics() {
    return new DiscoveryMetrics();
  }

  /** Closed with the context (it is {@link AutoCloseable}): its meters go with it. */
  @Bean
  @ConditionalOnMissingBean
  CertificateMetrics steelyardCertificateMetrics() {
    return new CertificateMetrics();
  }
}
