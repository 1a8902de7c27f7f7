package io.steelyard.spring.cloud;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.steelyard.registry.DecodedValue;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.registry.ValueCodec;
import io.steelyard.testkit.EtcdCluster;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.availability.AvailabilityChangeEvent;
import org.springframework.boot.availability.ReadinessState;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerGracefulShutdownLifecycle;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.SmartLifecycle;
import org.springframework.web.client.RestClient;

/**
 * Two HTTP servers registered by this module (weights 1 and 3) and a client calling them through
 * a {@code @LoadBalanced RestClient}, against a real etcd. The contexts start once; the tests run
 * in order: the weighted share, a drain, readiness, then a rolling restart of one server.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class LoadBalancingIT {

  private static final Logger logger = LoggerFactory.getLogger(LoadBalancingIT.class);

  @RegisterExtension
  static final EtcdCluster etcd = EtcdCluster.builder().backend(EtcdCluster.Backend.BINARY).build();

  private static final String PREFIX = "/lb-it";
  private static final String SERVICE = "hello";

  private static Client reader;
  private static ConfigurableApplicationContext serverA;
  private static ConfigurableApplicationContext serverB;
  private static ConfigurableApplicationContext client;
  private static RestClient rest;

  /** Whether each stopped server's key was still in etcd when its web server began to stop. */
  private static final List<Boolean> keyPresentWhenWebServerStopped = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void start() throws Exception {
    reader = EtcdConnection.of(etcd.endpoints()).connect();
    serverA = server(1).run();
    serverB = server(3).run();
    for (ConfigurableApplicationContext s : List.of(serverA, serverB)) {
      auto(s).registered().get(30, TimeUnit.SECONDS);
    }
    client = Apps.client(etcd.endpoints(), PREFIX).run();
    rest = client.getBean(RestClient.Builder.class).build();
  }

  @AfterAll
  static void stop() {
    for (ConfigurableApplicationContext c : new ConfigurableApplicationContext[] {client, serverB, serverA}) {
      if (c != null) {
        c.close();
      }
    }
    if (reader != null) {
      reader.close();
    }
  }

  private static SpringApplicationBuilder server(int weight) {
    SpringApplicationBuilder b = Apps.httpServer(etcd.endpoints(), PREFIX, SERVICE, weight);
    // Runs after this module's registration has stopped and before the web server's graceful
    // shutdown: records whether the key was still there.
    b.initializers(ctx -> ctx.getBeanFactory().registerSingleton("keyProbe", new SmartLifecycle() {
      private volatile boolean running;

      @Override public void start() {
        running = true;
      }

      @Override public void stop() {
        running = false;
        String address = ctx.getBean(SteelyardAutoServiceRegistration.class).registration().orElseThrow().getAddress();
        keyPresentWhenWebServerStopped.add(keyExists(address));
      }

      @Override public boolean isRunning() {
        return running;
      }

      @Override public int getPhase() {
        return WebServerGracefulShutdownLifecycle.SMART_LIFECYCLE_PHASE + 1;
      }
    }));
    return b;
  }

  @Test
  @Order(1)
  void weightsOneAndThreeGetAQuarterAndThreeQuartersOfFourThousandCalls() {
    awaitBothAnswer();
    Map<String, Integer> byServer = call(4_000);

    assertThat(byServer).containsOnlyKeys(address(serverA), address(serverB));
    double shareA = byServer.get(address(serverA)) / 4_000.0;
    logger.info("4,000 calls over weights 1 and 3: {}", byServer);
    assertThat(shareA).isBetween(0.22, 0.28);
  }

  @Test
  @Order(2)
  void drainTakesAServerOutWithoutAFailedCall() throws Exception {
    try (Load load = new Load()) {
      registry(serverB).setStatus(registration(serverB), SteelyardServiceRegistry.OUT_OF_SERVICE);
      await().atMost(Duration.ofSeconds(10)).until(() -> etcdWeight(address(serverB)) == 0);
      await().atMost(Duration.ofSeconds(10)).until(() -> call(50).keySet().equals(java.util.Set.of(address(serverA))));
      assertThat(load.finish()).as("failed calls").isZero();
    }
    registry(serverB).setStatus(registration(serverB), SteelyardServiceRegistry.UP);
    await().atMost(Duration.ofSeconds(10)).until(() -> etcdWeight(address(serverB)) == 3);
    awaitBothAnswer();
  }

  @Test
  @Order(3)
  void readinessRefusingTrafficDrainsAndAcceptingRestoresTheWeight() {
    AvailabilityChangeEvent.publish(serverA, ReadinessState.REFUSING_TRAFFIC);
    await().atMost(Duration.ofSeconds(10)).until(() -> etcdWeight(address(serverA)) == 0);
    await().atMost(Duration.ofSeconds(10)).until(() -> call(50).keySet().equals(java.util.Set.of(address(serverB))));

    AvailabilityChangeEvent.publish(serverA, ReadinessState.ACCEPTING_TRAFFIC);
    await().atMost(Duration.ofSeconds(10)).until(() -> etcdWeight(address(serverA)) == 1);
    awaitBothAnswer();
  }

  @Test
  @Order(4)
  void aRollingRestartOfOneServerFailsNoCall() throws Exception {
    String oldB = address(serverB);
    try (Load load = new Load()) {
      serverB.close();
      assertThat(keyPresentWhenWebServerStopped).containsExactly(false);
      await().atMost(Duration.ofSeconds(10)).until(() -> call(20).keySet().equals(java.util.Set.of(address(serverA))));
      serverB = server(3).run();
      auto(serverB).registered().get(30, TimeUnit.SECONDS);
      await().atMost(Duration.ofSeconds(10)).until(() -> call(40).containsKey(address(serverB)));
      // The load's own calls reach the new server a moment later than these: wait for them too
      // rather than stop the load the instant this thread saw it.
      String newB = address(serverB);
      await().atMost(Duration.ofSeconds(10)).until(() -> load.answeredBy.containsKey(newB));
      assertThat(load.finish()).as("failed calls").isZero();
      assertThat(load.answeredBy).containsKeys(oldB, address(serverA), newB);
    }
  }

  /** Two threads calling until {@link #finish}; counts failures and who answered. */
  private static final class Load implements AutoCloseable {
    final AtomicInteger failed = new AtomicInteger();
    final Map<String, Integer> answeredBy = new ConcurrentHashMap<>();
    final AtomicBoolean stop = new AtomicBoolean();
    final ExecutorService pool = Executors.newFixedThreadPool(2);
    final List<Future<?>> workers;

    Load() {
      Runnable loop = () -> {
        while (!stop.get()) {
          try {
            answeredBy.merge(rest.get().uri("http://" + SERVICE + "/hello").retrieve().body(String.class), 1, Integer::sum);
          } catch (RuntimeException e) {
            failed.incrementAndGet();
          }
        }
      };
      workers = List.of(pool.submit(loop), pool.submit(loop));
    }

    int finish() throws Exception {
      stop.set(true);
      for (Future<?> w : workers) {
        w.get(30, TimeUnit.SECONDS);
      }
      return failed.get();
    }

    @Override
    public void close() {
      stop.set(true);
      pool.shutdownNow();
    }
  }

  private static void awaitBothAnswer() {
    await().atMost(Duration.ofSeconds(10))
        .until(() -> call(40).keySet().containsAll(List.of(address(serverA), address(serverB))));
  }

  private static Map<String, Integer> call(int n) {
    Map<String, Integer> byServer = new HashMap<>();
    for (int i = 0; i < n; i++) {
      byServer.merge(rest.get().uri("http://" + SERVICE + "/hello").retrieve().body(String.class), 1, Integer::sum);
    }
    return byServer;
  }

  private static SteelyardAutoServiceRegistration auto(ConfigurableApplicationContext c) {
    return c.getBean(SteelyardAutoServiceRegistration.class);
  }

  private static SteelyardRegistration registration(ConfigurableApplicationContext c) {
    return auto(c).registration().orElseThrow();
  }

  private static SteelyardServiceRegistry registry(ConfigurableApplicationContext c) {
    return c.getBean(SteelyardServiceRegistry.class);
  }

  private static String address(ConfigurableApplicationContext c) {
    return registration(c).getAddress();
  }

  private static boolean keyExists(String address) {
    try {
      return reader.getKVClient().get(bytes(PREFIX + "/" + SERVICE + "/" + address))
          .get(10, TimeUnit.SECONDS).getCount() > 0;
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private static int etcdWeight(String address) throws Exception {
    var kvs = reader.getKVClient().get(bytes(PREFIX + "/" + SERVICE + "/" + address))
        .get(10, TimeUnit.SECONDS).getKvs();
    if (kvs.isEmpty()) {
      return -1;
    }
    return ((DecodedValue.Accepted) ValueCodec.decode(kvs.get(0).getValue().getBytes())).weight();
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }
}
