package io.steelyard.examples.spring;

import io.steelyard.spring.GrpcServerRegistration;
import java.util.Map;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.core.env.Environment;
import org.springframework.stereotype.Component;

/**
 * Prints {@code READY address=HOST:PORT service=NAME weight=W management=http://HOST:PORT} on
 * stdout once the application is up and its key is in etcd (scripts wait for that line); with
 * {@code --spring-greeter.calls=N}, then calls {@code etcd:///greeter} N times and prints {@code
 * CALLS n=N ADDRESS=COUNT ...}. Logs go to stderr.
 */
@Component
class ReadyLine implements ApplicationListener<ApplicationReadyEvent> {

  private static final Logger logger = LoggerFactory.getLogger(ReadyLine.class);

  private final GrpcServerRegistration registration;
  private final GreeterCaller caller;
  private final Environment environment;
  private final int calls;

  ReadyLine(GrpcServerRegistration registration, GreeterCaller caller, Environment environment,
      @Value("${spring-greeter.calls:0}") int calls) {
    this.registration = registration;
    this.caller = caller;
    this.environment = environment;
    this.calls = calls;
  }

  @Override
  public void onApplicationEvent(ApplicationReadyEvent event) {
    registration.registered().thenRunAsync(this::ready).exceptionally(e -> {
      logger.error("spring-greeter: READY or its calls through etcd:///greeter failed", e);
      return null;
    });
  }

  private void ready() {
    System.out.printf("READY address=%s service=%s weight=%d management=%s%n",
        registration.address().orElseThrow(), registration.service(),
        registration.registration().orElseThrow().weight(), managementUrl());
    System.out.flush();
    if (calls > 0) {
      Map<String, Integer> spread = caller.spread(calls);
      System.out.println("CALLS n=" + calls + " " + spread.entrySet().stream()
          .map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining(" ")));
      System.out.flush();
    }
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
