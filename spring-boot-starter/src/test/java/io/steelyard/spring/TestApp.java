package io.steelyard.spring;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.context.annotation.Bean;

/** The application the tests start: the who service, and whatever the starter configures. */
@SpringBootConfiguration
@EnableAutoConfiguration
class TestApp {

  @Bean
  WhoService whoService(@Value("${test.name:who}") String name) {
    return new WhoService(name);
  }
}
