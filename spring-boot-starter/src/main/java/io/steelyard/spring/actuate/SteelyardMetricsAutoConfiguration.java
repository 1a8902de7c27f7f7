package io.steelyard.spring.actuate;

import io.micrometer.core.instrument.binder.MeterBinder;
import io.steelyard.spring.GrpcServerRegistration;
import io.steelyard.spring.SteelyardRegistrationAutoConfiguration;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/** steelyard's meters ({@link SteelyardMeterBinder}) when Micrometer is on the classpath. */
@AutoConfiguration(after = SteelyardRegistrationAutoConfiguration.class)
@ConditionalOnClass(MeterBinder.class)
public final class SteelyardMetricsAutoConfiguration {

  @Bean
  @ConditionalOnMissingBean
  SteelyardMeterBinder steelyardMeterBinder(ObjectProvider<GrpcServerRegistration> registration) {
    return new SteelyardMeterBinder(registration.getIfAvailable());
  }
}
