package io.steelyard.spring.cloud;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.spring.GrpcServerRegistration;
import io.steelyard.testkit.EtcdCluster;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * An application with a Spring gRPC server and an HTTP server, the gRPC starter and this module
 * together: each server is registered once, the gRPC one as {@code NAME} and the HTTP one as
 * {@code NAME-http}; naming the HTTP service as the gRPC one fails the startup.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class GrpcAndHttpIT {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  private static final String PREFIX = "/both-it";

  private static Client reader;
  private static ConfigurableApplicationContext app;

  @BeforeAll
  static void start() throws Exception {
    reader = EtcdConnection.of(etcd.endpoints()).connect();
    app = both().run();
    app.getBean(GrpcServerRegistration.class).registered().get(30, TimeUnit.SECONDS);
    app.getBean(SteelyardAutoServiceRegistration.class).registered().get(30, TimeUnit.SECONDS);
  }

  @AfterAll
  static void stop() {
    if (app != null) {
      app.close();
    }
    if (reader != null) {
      reader.close();
    }
  }

  private static SpringApplicationBuilder both(String... more) {
    return new SpringApplicationBuilder(HelloApp.class)
        .web(WebApplicationType.SERVLET)
        .properties("spring.application.name=catalog",
            "spring.main.banner-mode=off",
            "server.port=0",
            "server.address=127.0.0.1",
            "spring.grpc.server.port=0",
            "spring.grpc.server.host=127.0.0.1",
            "spring.grpc.client.enabled=false",
            "steelyard.etcd.endpoints=" + etcd.endpoints(),
            "steelyard.etcd.prefix=" + PREFIX,
            "steelyard.registration.weight=2")
        .properties(more);
  }

  @Test
  void registersTheGrpcServerAndTheHttpServerOnceEach() throws Exception {
    String grpcAddress = app.getBean(GrpcServerRegistration.class).address().orElseThrow();
    String httpAddress = app.getBean(SteelyardAutoServiceRegistration.class).registration().orElseThrow().getAddress();
    int httpPort = Integer.parseInt(app.getEnvironment().getProperty("local.server.port"));

    assertThat(keys()).containsExactlyInAnyOrder(
        PREFIX + "/catalog/" + grpcAddress,
        PREFIX + "/catalog-http/" + httpAddress);
    assertThat(httpAddress).isEqualTo("127.0.0.1:" + httpPort);
    assertThat(grpcAddress).isNotEqualTo(httpAddress);
  }

  @Test
  void namingTheHttpServiceAsTheGrpcOneFailsTheStartup() {
    assertThatThrownBy(() -> both("steelyard.cloud.registration.service=catalog", "server.port=0").run())
        .hasRootCauseMessage("steelyard.cloud.registration.service: 'catalog' is the name the gRPC"
            + " server registers as (expected: another name, or unset for 'catalog-http')");
  }

  private static List<String> keys() throws Exception {
    List<KeyValue> kvs = reader.getKVClient()
        .get(bytes(PREFIX + "/"), GetOption.builder().isPrefix(true).withKeysOnly(true).build())
        .get(10, TimeUnit.SECONDS).getKvs();
    return kvs.stream().map(kv -> kv.getKey().toString(StandardCharsets.UTF_8)).toList();
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
