package io.steelyard.spring.cloud;

import java.util.ArrayList;
import java.util.List;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;

/** How the tests start applications against one etcd under one prefix. */
final class Apps {

  private Apps() {}

  /** An HTTP server {@code service} of {@code weight}, registered by this module, no gRPC. */
  static SpringApplicationBuilder httpServer(String endpoints, String prefix, String service, int weight, String... more) {
    List<String> props = new ArrayList<>(List.of(
        "spring.application.name=" + service,
        "spring.main.banner-mode=off",
        "server.port=0",
        "server.address=127.0.0.1",
        "server.shutdown=graceful",
        "spring.grpc.server.enabled=false",
        "spring.grpc.client.enabled=false",
        "steelyard.etcd.endpoints=" + endpoints,
        "steelyard.etcd.prefix=" + prefix,
        "steelyard.registration.weight=" + weight,
        "steelyard.registration.ttl=3s",
        "steelyard.registration.drain-delay=500ms"));
    props.addAll(List.of(more));
    return new SpringApplicationBuilder(HelloApp.class)
        .web(WebApplicationType.SERVLET)
        .properties(props.toArray(String[]::new));
  }

  /** A client: no web server, nothing registered; discovery and the load balancer only. */
  static SpringApplicationBuilder client(String endpoints, String prefix, String... more) {
    List<String> props = new ArrayList<>(List.of(
        "spring.application.name=caller",
        "spring.main.banner-mode=off",
        "spring.grpc.server.enabled=false",
        "spring.grpc.client.enabled=false",
        "steelyard.etcd.endpoints=" + endpoints,
        "steelyard.etcd.prefix=" + prefix));
    props.addAll(List.of(more));
    return new SpringApplicationBuilder(HelloApp.class)
        .web(WebApplicationType.NONE)
        .properties(props.toArray(String[]::new));
  }
}
