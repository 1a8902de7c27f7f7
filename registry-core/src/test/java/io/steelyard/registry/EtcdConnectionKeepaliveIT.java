package io.steelyard.registry;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.grpc.stub.StreamObserver;
import io.steelyard.testkit.EtcdCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Why etcd sent {@code GOAWAY ENHANCE_YOUR_CALM too_many_pings}, and that {@link
 * EtcdConnection#connect()} no longer earns it: the same registry-like client (reads that open a
 * connection to every member, a watch, a lease kept alive) runs on a 3-member cluster once with
 * jetcd's default keepalive without calls, in a child JVM, and once with EtcdConnection's client,
 * in this JVM, side by side. The child gets the GOAWAY within a minute; ours gets none in the same
 * time.
 */
@Timeout(value = 150, unit = TimeUnit.SECONDS)
class EtcdConnectionKeepaliveIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().members(3).build();

  /** Three strikes of 10 s pings, plus slack for a loaded machine. */
  private static final Duration WINDOW = Duration.ofSeconds(55);

  @TempDir Path tmp;

  @Test
  void idleMemberConnectionsAreNotPingedSoEtcdNeverSaysTooManyPings() throws Exception {
    Logger grpc = Logger.getLogger("io.grpc");
    List<String> ours = new CopyOnWriteArrayList<>();
    Handler capture =
        new Handler() {
          @Override
          public void publish(LogRecord r) {
            ours.add(r.getLoggerName() + " " + r.getMessage() + " " + java.util.Arrays.toString(r.getParameters()));
          }

          @Override
          public void flush() {}

          @Override
          public void close() {}
        };
    capture.setLevel(Level.ALL);
    grpc.addHandler(capture);

    Path childErr = tmp.resolve("child.err");
    Process child =
        new ProcessBuilder(
                Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx96m",
                "-cp", System.getProperty("java.class.path"),
                IdleJetcdClient.class.getName(),
                etcd.endpoints(),
                Long.toString(WINDOW.toSeconds() + 5))
            .redirectError(childErr.toFile())
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    try (Client client = EtcdConnection.of(etcd.endpoints()).connect()) {
      exercise(client);
      long started = System.nanoTime();
      await("the old settings' GOAWAY in the child's stderr")
          .atMost(WINDOW.plusSeconds(15))
          .pollInterval(Duration.ofMillis(500))
          .until(() -> Files.readString(childErr, UTF_8).contains("too_many_pings"));
      // Our client, for at least the same window the old settings needed and then some, must see
      // no GOAWAY at any point: checked throughout, failing at the first one.
      Duration rest = Duration.ofNanos(Math.max(0, Duration.ofSeconds(45).toNanos() - (System.nanoTime() - started)));
      await("no GOAWAY for our client while idle")
          .during(rest)
          .atMost(rest.plusSeconds(10))
          .pollInterval(Duration.ofMillis(500))
          .until(() -> ours.stream()
              .noneMatch(line -> line.contains("too_many_pings") || line.contains("ENHANCE_YOUR_CALM")));
      // Still connected and serving on every member.
      for (int i = 0; i < 6; i++) {
        client.getKVClient().get(bytes("/quiet/" + i)).get(5, TimeUnit.SECONDS);
      }
    } finally {
      grpc.removeHandler(capture);
      child.destroyForcibly();
      child.waitFor(10, TimeUnit.SECONDS);
    }
  }

  /** Connects to every member (jetcd balances round_robin), then holds a watch and a lease. */
  static void exercise(Client client) throws Exception {
    for (int i = 0; i < 6; i++) {
      client.getKVClient().put(bytes("/quiet/" + i), bytes("x")).get(10, TimeUnit.SECONDS);
    }
    Watch.Watcher watcher =
        client.getWatchClient().watch(bytes("/quiet/"), WatchOption.builder().isPrefix(true).build(), r -> {});
    long lease = client.getLeaseClient().grant(10).get(10, TimeUnit.SECONDS).getID();
    client.getLeaseClient().keepAlive(lease, new StreamObserver<LeaseKeepAliveResponse>() {
      @Override
      public void onNext(LeaseKeepAliveResponse value) {}

      @Override
      public void onError(Throwable t) {}

      @Override
      public void onCompleted() {}
    });
    assertThat(watcher).isNotNull();
  }

  private static ByteSequence bytes(String s) {
    return ByteSequence.from(s, UTF_8);
  }
}
