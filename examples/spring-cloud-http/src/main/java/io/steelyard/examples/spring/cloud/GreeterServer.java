package io.steelyard.examples.spring.cloud;

import io.steelyard.spring.cloud.SteelyardAutoServiceRegistration;
import io.steelyard.spring.cloud.SteelyardRegistration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.annotation.Profile;
import org.springframework.context.event.EventListener;
import org.springframework.core.env.Environment;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The server role: {@code GET /hello} answers with the address this instance registered, and
 * {@code READY address=HOST:PORT management=URL} goes to stdout once the key is in etcd.
 */
@RestController
@Profile("server")
class GreeterServer {

  private static final Logger logger = LoggerFactory.getLogger(GreeterServer.class);

  private final SteelyardAutoServiceRegistration registration;
  private final Environment environment;

  GreeterServer(SteelyardAutoServiceRegistration registration, Environment environment) {
    this.registration = registration;
    this.environment = environment;
  }

  @GetMapping("/hello")
  String hello() {
    return registration.registration().map(SteelyardRegistration::getAddress).orElse("unregistered");
  }

  @EventListener(ApplicationReadyEvent.class)
  void ready() {
    registration.registered().thenAccept(r -> {
      System.out.printf("READY address=%s management=%s%n", r.getAddress(), managementUrl());
      System.out.flush();
    }).exceptionally(e -> {
      logger.error("spring-cloud-greeter: the READY line failed", e);
      return null;
    });
  }

  /** Where the actuator answers: its own server when management.server.port is set, else the main one. */
  private String managementUrl() {
    String port = environment.getProperty("local.management.port",
        environment.getProperty("local.server.port", "?"));
    String host = environment.getProperty("management.server.address",
        environment.getProperty("server.address", "127.0.0.1"));
    return "http://" + host + ":" + port;
  }
}
