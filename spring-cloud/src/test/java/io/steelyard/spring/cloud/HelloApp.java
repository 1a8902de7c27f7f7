package io.steelyard.spring.cloud;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.cloud.client.loadbalancer.LoadBalanced;
import org.springframework.context.annotation.Bean;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.client.RestClient;

/** The application the tests start: {@code GET /hello} answers with the registered address. */
@SpringBootConfiguration
@EnableAutoConfiguration
class HelloApp {

  @Bean
  @LoadBalanced
  RestClient.Builder loadBalancedRestClient() {
    return RestClient.builder();
  }

  /** Registered as a member class of this configuration. */
  @RestController
  static class HelloController {
    private final SteelyardAutoServiceRegistration registration;

    HelloController(SteelyardAutoServiceRegistration registration) {
      this.registration = registration;
    }

    @GetMapping("/hello")
    String hello() {
      return registration.registration().map(SteelyardRegistration::getAddress).orElse("unregistered");
    }
  }
}
