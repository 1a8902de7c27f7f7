package io.steelyard.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import javax.annotation.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The Quarkus example as users run it, against real etcd: two callees of weights 1 (zone a) and
 * 3 (zone b) registered through Stork's {@code steelyard} registrar, and callers that reach them
 * through {@code stork://greeter} (the REST client) and {@code name-resolver=stork} (the gRPC
 * client) with discovery {@code steelyard} and balancer {@code steelyard-weighted}. Each case is
 * measured over both transports; the cases share one etcd and one pair of callees, in order
 * (split, zones, weight change, drain, SIGTERM), each leaving the registry as the next expects.
 * The figures go to {@code target/quarkus-greeter-figures.md}.
 */
@Timeout(value = 600, unit = TimeUnit.SECONDS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class QuarkusGreeterIT {

  private static final List<String> TRANSPORTS = List.of("rest", "grpc");
  private static final int CALLS = 4_000;
  private static final Duration START = Duration.ofSeconds(120);

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private static final List<AutoCloseable> closing = new ArrayList<>();
  private static final StringBuilder figures = new StringBuilder();
  private static final List<Event> events = new CopyOnWriteArrayList<>();

  private static QuarkusGreeter a;
  private static QuarkusGreeter b;
  private static QuarkusGreeter caller;
  private static QuarkusGreeter callerInA;

  /** A change of a greeter key, as this test's own watch received it. */
  record Event(long millis, WatchEvent.EventType type, String key, String value) {}

  @BeforeAll
  static void startGreeters() throws Exception {
    Client client = EtcdConnection.of(etcd.endpoints()).connect();
    closing.add(client);
    Watch.Watcher watcher = client.getWatchClient().watch(bytes("/services/greeter/"),
        WatchOption.builder().isPrefix(true).build(),
        r -> r.getEvents().forEach(e -> events.add(new Event(System.currentTimeMillis(), e.getEventType(),
            e.getKeyValue().getKey().toString(StandardCharsets.UTF_8),
            e.getKeyValue().getValue().toString(StandardCharsets.UTF_8)))));
    closing.add(watcher);
    String endpoints = etcd.endpoints();
    // All four JVMs start together; each waits for its own READY line.
    a = started(QuarkusGreeter.start("a", endpoints, "greeter.weight=1", "greeter.zone=a"));
    b = started(QuarkusGreeter.start("b", endpoints, "greeter.weight=3", "greeter.zone=b"));
    caller = started(QuarkusGreeter.start("caller", endpoints, "greeter.register=false"));
    callerInA = started(QuarkusGreeter.start("caller-a", endpoints, "greeter.register=false",
        "quarkus.stork.greeter.service-discovery.zone=a"));
    for (QuarkusGreeter g : List.of(a, b, caller, callerInA)) {
      g.awaitReady(START);
    }
    figures.append("| case | transport | measured |\n|---|---|---|\n");
  }

  private static QuarkusGreeter started(QuarkusGreeter g) {
    closing.add(g);
    return g;
  }

  @AfterAll
  static void stopAll() throws Exception {
    for (int i = closing.size() - 1; i >= 0; i--) {
      closing.get(i).close();
    }
    Files.writeString(Path.of("target", "quarkus-greeter-figures.md"), figures.toString());
    System.out.println(figures);
  }

  @Test
  @Order(1)
  void fourThousandCallsSplitByWeightWithNoneFailed() throws Exception {
    for (String transport : TRANSPORTS) {
      QuarkusGreeter.Calls calls = caller.calls(transport, CALLS, 4);
      double shareA = share(calls, a.address(), 0);
      record("4,000 calls, weights 1:3", transport, String.format(Locale.ROOT,
          "%.1f %% / %.1f %%, %d failed", 100 * shareA, 100 * share(calls, b.address(), 0), failed(calls, 0)));
      assertThat(failed(calls, 0)).as("%s: %s", transport, calls.errors()).isZero();
      assertThat(shareA).as(transport).isBetween(0.22, 0.28);
    }
  }

  @Test
  @Order(2)
  void aCallerInZoneAKeepsItsCallsInZoneA() throws Exception {
    for (String transport : TRANSPORTS) {
      QuarkusGreeter.Calls calls = callerInA.calls(transport, CALLS, 4);
      double local = share(calls, a.address(), 0);
      record("caller in zone a, a:1 b:3", transport, String.format(Locale.ROOT,
          "%.1f %% in zone a, %d failed", 100 * local, failed(calls, 0)));
      assertThat(failed(calls, 0)).as("%s: %s", transport, calls.errors()).isZero();
      assertThat(local).as(transport).isGreaterThanOrEqualTo(0.95);
    }
  }

  @Test
  @Order(3)
  void weightSetToThreeToThreeReachesFiftyFiftyWithinTwoSeconds() throws Exception {
    try (CallLoad load = new CallLoad(caller)) {
      load.awaitCalls(200, 0);
      int seen = events.size();
      cli("weight", "set", "greeter", a.address(), "3");
      long t0 = awaitEvent(seen, e -> e.key().endsWith(a.address()) && e.value().contains("\"weight\":3"));
      long after = t0 + 2_000;
      load.awaitCalls(CALLS, after);
      for (String transport : TRANSPORTS) {
        List<CallLoad.Call> calls = load.calls(transport);
        double settled = share(calls, a.address(), after);
        record("weight set 1:3 → 3:3", transport, String.format(Locale.ROOT,
            "a's share %.1f %% in the first second, %.1f %% in the second, %.1f %% over the %d calls"
                + " from 2 s on; %d failed", 100 * share(calls, a.address(), t0, t0 + 1_000),
            100 * share(calls, a.address(), t0 + 1_000, after), 100 * settled,
            count(calls, after), failed(calls)));
        assertThat(failed(calls)).as(transport).isZero();
        assertThat(settled).as(transport).isBetween(0.47, 0.53);
      }
    }
  }

  @Test
  @Order(4)
  void drainStopsEveryCallToTheDrainedCalleeWithinTwoSeconds() throws Exception {
    try (CallLoad load = new CallLoad(caller)) {
      load.awaitCalls(200, 0);
      int seen = events.size();
      cli("drain", "greeter", a.address());
      long t0 = awaitEvent(seen, e -> e.key().endsWith(a.address()) && e.value().contains("\"weight\":0"));
      long after = t0 + 2_000;
      load.awaitCalls(CALLS / 2, after);
      for (String transport : TRANSPORTS) {
        List<CallLoad.Call> calls = load.calls(transport);
        long last = calls.stream().filter(c -> a.address().equals(c.server()))
            .mapToLong(CallLoad.Call::startedMillis).max().orElse(t0);
        record("steelyard drain a", transport, String.format(Locale.ROOT,
            "last call to a started %+d ms from when the test's own watch saw the drain; %d calls to a"
                + " of the %d from 2 s on; %d failed", last - t0,
            calls.stream().filter(c -> c.startedMillis() >= after && a.address().equals(c.server())).count(),
            count(calls, after), failed(calls)));
        assertThat(failed(calls)).as(transport).isZero();
        assertThat(last - t0).as(transport).isLessThan(2_000);
      }
    }
    int seen = events.size();
    cli("undrain", "greeter", a.address(), "--weight", "3");
    awaitEvent(seen, e -> e.key().endsWith(a.address()) && e.value().contains("\"weight\":3"));
  }

  @Test
  @Order(5)
  void sigtermRemovesTheKeyWithinFiveSecondsAndNoCallFailsAfter() throws Exception {
    try (CallLoad load = new CallLoad(caller)) {
      load.awaitCalls(200, 0);
      int seen = events.size();
      long t0 = System.currentTimeMillis();
      b.sigterm();
      long gone = awaitEvent(seen, e -> e.key().endsWith(b.address()) && e.type() == WatchEvent.EventType.DELETE);
      load.awaitCalls(CALLS / 2, gone);
      for (String transport : TRANSPORTS) {
        List<CallLoad.Call> calls = load.calls(transport);
        record("SIGTERM b", transport, String.format(Locale.ROOT,
            "key gone %d ms after SIGTERM; %d failed of the %d calls after that (%d failed before)",
            gone - t0, failed(calls, gone), count(calls, gone), failed(calls) - failed(calls, gone)));
        assertThat(failed(calls, gone)).as("%s: %s", transport, load.errors()).isZero();
      }
      assertThat(gone - t0).isLessThan(5_000);
    }
    assertThat(b.awaitExit(Duration.ofSeconds(30))).as("b exited after SIGTERM").isTrue();
  }

  private static void record(String what, String transport, String measured) {
    figures.append("| ").append(what).append(" | ").append(transport).append(" | ").append(measured).append(" |\n");
  }

  private static void cli(String... args) throws IOException, InterruptedException {
    Cli.Result r = Cli.run(etcd.endpoints(), args);
    assertThat(r.exitCode()).as("steelyard %s: %s", String.join(" ", args), r.stderr()).isZero();
  }

  /** When this test's own watch received the first change after the first {@code seen} matching {@code match}. */
  private static long awaitEvent(int seen, Predicate<Event> match) {
    await().atMost(Duration.ofSeconds(30)).until(() -> events.stream().skip(seen).anyMatch(match));
    return events.stream().skip(seen).filter(match).findFirst().orElseThrow().millis();
  }

  private static double share(QuarkusGreeter.Calls calls, String server, long from) {
    long total = 0;
    long to = 0;
    for (int i = 0; i < calls.answeredBy().length; i++) {
      if (calls.startedMillis()[i] >= from && calls.answeredBy()[i] != null) {
        total++;
        to += server.equals(calls.answeredBy()[i]) ? 1 : 0;
      }
    }
    return total == 0 ? 0 : to / (double) total;
  }

  private static int failed(QuarkusGreeter.Calls calls, long from) {
    int n = 0;
    for (int i = 0; i < calls.answeredBy().length; i++) {
      if (calls.startedMillis()[i] >= from && calls.answeredBy()[i] == null) {
        n++;
      }
    }
    return n;
  }

  private static double share(List<CallLoad.Call> calls, String server, long from) {
    return share(calls, server, from, Long.MAX_VALUE);
  }

  private static double share(List<CallLoad.Call> calls, String server, long from, long to) {
    long total = calls.stream().filter(c -> c.server() != null && c.startedMillis() >= from && c.startedMillis() < to).count();
    long hits = calls.stream().filter(c -> server.equals(c.server()) && c.startedMillis() >= from && c.startedMillis() < to).count();
    return total == 0 ? 0 : hits / (double) total;
  }

  private static long count(List<CallLoad.Call> calls, long from) {
    return calls.stream().filter(c -> c.startedMillis() >= from).count();
  }

  private static long failed(List<CallLoad.Call> calls) {
    return failed(calls, 0);
  }

  private static long failed(List<CallLoad.Call> calls, long from) {
    return calls.stream().filter(c -> c.server() == null && c.startedMillis() >= from).count();
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, StandardCharsets.UTF_8);
  }

  /**
   * Calls from {@code caller} while a change happens: batches of 200 calls, REST and gRPC in
   * turn, until closed; every call kept with its start time and who answered.
   */
  static final class CallLoad implements AutoCloseable {

    record Call(String transport, long startedMillis, @Nullable String server) {}

    private final List<Call> calls = new CopyOnWriteArrayList<>();
    private final List<String> errors = new CopyOnWriteArrayList<>();
    private final Thread thread;
    private volatile boolean stop;
    @Nullable private volatile Throwable failure;

    CallLoad(QuarkusGreeter caller) {
      thread = new Thread(() -> {
        try {
          for (int round = 0; !stop; round++) {
            QuarkusGreeter.Calls batch = caller.calls(TRANSPORTS.get(round % 2), 200, 4);
            List<Call> add = new ArrayList<>();
            for (int i = 0; i < batch.answeredBy().length; i++) {
              add.add(new Call(batch.transport(), batch.startedMillis()[i], batch.answeredBy()[i]));
            }
            calls.addAll(add);
            errors.addAll(batch.errors());
          }
        } catch (Throwable t) {
          failure = t;
        }
      }, "quarkus-call-load");
      thread.setDaemon(true);
      thread.start();
    }

    /** Waits until each transport has {@code n} calls started at {@code fromMillis} or later. */
    void awaitCalls(int n, long fromMillis) {
      await().atMost(Duration.ofSeconds(240)).until(() -> {
        if (failure != null) {
          throw new AssertionError("the call load failed", failure);
        }
        return TRANSPORTS.stream().allMatch(t -> calls.stream()
            .filter(c -> c.transport().equals(t) && c.startedMillis() >= fromMillis).count() >= n);
      });
    }

    List<Call> calls(String transport) {
      return calls.stream().filter(c -> c.transport().equals(transport)).toList();
    }

    List<String> errors() {
      return errors;
    }

    @Override
    public void close() throws InterruptedException {
      stop = true;
      thread.join(TimeUnit.SECONDS.toMillis(150));
    }
  }

}
