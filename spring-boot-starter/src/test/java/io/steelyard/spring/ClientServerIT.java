package io.steelyard.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.grpc.Channel;
import io.grpc.StatusRuntimeException;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.grpc.client.GrpcChannelFactory;
import org.springframework.grpc.server.lifecycle.GrpcServerShutdownEvent;

/**
 * Several applications in one JVM against one real etcd: two servers (weights 1 and 3), a client
 * calling {@code etcd:///who} with a weighted policy, and a second client whose {@code
 * steelyard.etcd.prefix} differs. The contexts start once; the tests run in order, the last one
 * stops a server under load.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class ClientServerIT {

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  private static final String POLICY = "weighted_round_robin_static";

  private static Client writer;
  private static ConfigurableApplicationContext serverA;
  private static ConfigurableApplicationContext serverB;
  private static ConfigurableApplicationContext client;
  private static ConfigurableApplicationContext otherPrefixClient;
  /** Whether B's key was still in etcd when B's gRPC server began to shut down. */
  private static final List<Boolean> keyPresentWhenServerStopped = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void startApplications() throws Exception {
    writer = EtcdConnection.of(etcd.endpoints()).connect();
    serverA = server("a", 1, WebApplicationType.REACTIVE).run();
    SpringApplicationBuilder b = server("b", 3, WebApplicationType.NONE);
    b.listeners((ApplicationListener<GrpcServerShutdownEvent>) e -> keyPresentWhenServerStopped.add(
        keyExists(serverB.getBean(GrpcServerRegistration.class).registration().orElseThrow().key())));
    serverB = b.run();
    for (ConfigurableApplicationContext s : List.of(serverA, serverB)) {
      s.getBean(GrpcServerRegistration.class).registered().get(30, TimeUnit.SECONDS);
    }
    client = client("/services").run();
    // The other client's prefix holds server A alone.
    String a = registration(serverA).address().orElseThrow();
    writer.getKVClient().put(bytes("/other/who/" + a), bytes(a + "|1")).get(10, TimeUnit.SECONDS);
    otherPrefixClient = client("/other").run();
  }

  @AfterAll
  static void stopApplications() {
    for (ConfigurableApplicationContext c : new ConfigurableApplicationContext[] {
        otherPrefixClient, client, serverB, serverA}) {
      if (c != null) {
        c.close();
      }
    }
    if (writer != null) {
      writer.close();
    }
  }

  private static SpringApplicationBuilder server(String name, int weight, WebApplicationType web) {
    return new SpringApplicationBuilder(TestApp.class)
        .web(web)
        .properties(
            "spring.application.name=who",
            "test.name=" + name,
            "server.port=0",
            "spring.grpc.server.port=0",
            "spring.grpc.server.host=127.0.0.1",
            "spring.grpc.server.health.enabled=true",
            "spring.grpc.client.enabled=false",
            "steelyard.etcd.endpoints=" + etcd.endpoints(),
            "steelyard.registration.weight=" + weight,
            "management.endpoints.web.exposure.include=steelyard");
  }

  private static SpringApplicationBuilder client(String prefix) {
    return new SpringApplicationBuilder(TestApp.class)
        .web(WebApplicationType.NONE)
        .properties(
            "spring.application.name=caller",
            "spring.grpc.server.enabled=false",
            "steelyard.etcd.endpoints=" + etcd.endpoints(),
            "steelyard.etcd.prefix=" + prefix,
            "spring.grpc.client.channels.who.address=etcd:///who",
            "spring.grpc.client.channels.who.default-load-balancing-policy=" + POLICY);
  }

  private static GrpcServerRegistration registration(ConfigurableApplicationContext c) {
    return c.getBean(GrpcServerRegistration.class);
  }

  private static Channel channel(ConfigurableApplicationContext c) {
    return c.getBean(GrpcChannelFactory.class).createChannel("who");
  }

  private static Map<String, Integer> count(Channel ch, int calls) {
    Map<String, Integer> byServer = new HashMap<>();
    for (int i = 0; i < calls; i++) {
      byServer.merge(WhoService.call(ch), 1, Integer::sum);
    }
    return byServer;
  }

  /** Calls until every name in {@code expected} answered within one round of 20 calls. */
  private static void awaitAllAnswer(Channel ch, String... expected) {
    await().atMost(Duration.ofSeconds(30)).until(() -> count(ch, 20).keySet().containsAll(List.of(expected)));
  }

  @Test
  @Order(1)
  void aClientContextSpreadsItsCallsByTheRegisteredWeights() {
    Channel ch = channel(client);
    awaitAllAnswer(ch, "a", "b");
    Map<String, Integer> share = count(ch, 400);
    assertThat(share.get("b")).as("weights 1:3, %s", share).isBetween(280, 320);
  }

  @Test
  @Order(2)
  void aWeightSetThroughTheEndpointShiftsTheClientsShare() {
    int port = serverA.getEnvironment().getRequiredProperty("local.server.port", Integer.class);
    Http.Response r = Http.postJson(port, "/actuator/steelyard", "{\"weight\": 3}");
    assertThat(r.status()).as(r.body()).isEqualTo(200);
    Channel ch = channel(client);
    await().atMost(Duration.ofSeconds(30)).until(() -> {
      Map<String, Integer> c = count(ch, 40);
      return c.getOrDefault("a", 0) >= 16;
    });
    Map<String, Integer> share = count(ch, 400);
    assertThat(share.get("a")).as("weights 3:3, %s", share).isBetween(180, 220);
  }

  @Test
  @Order(3)
  void eachContextResolvesWithItsOwnPrefix() {
    Map<String, Integer> share = count(channel(otherPrefixClient), 50);
    assertThat(share).as("only A is registered under /other").containsOnlyKeys("a");
  }

  @Test
  @Order(4)
  void closingAServerContextUnderLoadDeregistersFirstAndLosesNoCall() throws Exception {
    Channel ch = channel(client);
    awaitAllAnswer(ch, "a", "b");
    String keyOfB;
    AtomicBoolean stop = new AtomicBoolean();
    Map<String, AtomicInteger> answered = new ConcurrentHashMap<>();
    List<Throwable> failures = new CopyOnWriteArrayList<>();
    ExecutorService callers = Executors.newFixedThreadPool(4);
    List<Future<?>> loops = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      loops.add(callers.submit(() -> {
        while (!stop.get()) {
          try {
            answered.computeIfAbsent(WhoService.call(ch), k -> new AtomicInteger()).incrementAndGet();
          } catch (StatusRuntimeException e) {
            failures.add(e);
          }
        }
      }));
    }
    try {
      await().atMost(Duration.ofSeconds(30)).until(() -> answered.containsKey("b") && answered.containsKey("a"));
      keyOfB = registration(serverB).registration().orElseThrow().key();
      serverB.close();
      int aAfterClose = answered.get("a").get();
      await().atMost(Duration.ofSeconds(30)).until(() -> answered.get("a").get() > aAfterClose + 50);
    } finally {
      stop.set(true);
      for (Future<?> f : loops) {
        f.get(30, TimeUnit.SECONDS);
      }
      callers.shutdownNow();
    }
    assertThat(failures).as("calls lost while B shut down").isEmpty();
    assertThat(keyPresentWhenServerStopped).as("B's key when its gRPC server began to stop").containsExactly(false);
    assertThat(keyExists(keyOfB)).isFalse();
    assertThat(count(ch, 20)).containsOnlyKeys("a");
  }

  private static boolean keyExists(String key) {
    try {
      return writer.getKVClient().get(bytes(key)).get(10, TimeUnit.SECONDS).getCount() > 0;
    } catch (Exception e) {
      throw new AssertionError("get " + key, e);
    }
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
