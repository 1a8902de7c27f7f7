package io.steelyard.examples.spring;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * {@code bin/spring-greeter}: the greeter as a Spring Boot application. Nothing in its code talks
 * to etcd: the steelyard starter registers the Spring gRPC server from {@code application.yml}
 * ({@code steelyard.registration.*}), resolves the client bean's {@code etcd:///greeter} channel,
 * and shows both at {@code /actuator/steelyard} and {@code /actuator/health/steelyard}.
 *
 * <pre>
 * bin/spring-greeter --spring.grpc.server.port=0 --management.server.port=0 --steelyard.registration.weight=5
 * READY address=127.0.0.1:40123 service=greeter weight=5 management=http://127.0.0.1:40124
 * </pre>
 */
@SpringBootApplication
public class SpringGreeterApplication {

  public static void main(String[] args) {
    SpringApplication.run(SpringGreeterApplication.class, args);
  }
}
