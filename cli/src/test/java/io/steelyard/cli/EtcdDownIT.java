package io.steelyard.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.steelyard.testkit.EtcdCluster;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * With etcd down, every command fails with exit 1 within {@code --timeout} (plus a little for
 * closing the client) and says etcd was unreachable and where.
 */
@Timeout(90)
class EtcdDownIT {

  private static final Duration TIMEOUT = Duration.ofSeconds(1);
  /** Client set-up and close on a loaded 2-core box; far below the 5s default timeout. */
  private static final Duration SLACK = Duration.ofMillis(2500);

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  private static Cli cli;
  private static ServerSocket silent;
  private static final List<Socket> accepted = new ArrayList<>();

  @BeforeAll
  static void stopEtcd() throws IOException {
    cli = Cli.withEndpoints(etcd.endpoints());
    etcd.member(0).stop();
    // A peer that accepts connections and never answers: the worst case for a timeout.
    silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread acceptor =
        new Thread(
            () -> {
              try {
                while (true) {
                  Socket s = silent.accept();
                  synchronized (accepted) {
                    accepted.add(s);
                  }
                }
              } catch (IOException closed) {
                // test over
              }
            },
            "silent-etcd");
    acceptor.setDaemon(true);
    acceptor.start();
    // The bound below is about waiting for etcd, not about the JVM: the first command of a JVM
    // loads jetcd, gRPC, Netty and Vert.x, which on a loaded 2-core box took 5-6 s by itself
    // (measured: 6.3 s cold, then 1.2-1.6 s per run against the silent peer). Load them once,
    // unmeasured, against both kinds of dead etcd.
    cli.run("--timeout", "1s", "list", "greeter");
    Cli.withEndpoints("http://127.0.0.1:" + silent.getLocalPort()).run("--timeout", "1s", "list", "greeter");
  }

  @AfterAll
  static void closeSilent() throws IOException {
    silent.close();
    synchronized (accepted) {
      for (Socket s : accepted) {
        s.close();
      }
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(
      strings = {
        "list greeter",
        "list greeter --output json",
        "weight get greeter 10.0.0.7:50051",
        "weight set greeter 10.0.0.7:50051 3",
        "drain greeter 10.0.0.7:50051",
        "undrain greeter 10.0.0.7:50051",
        "undrain greeter 10.0.0.7:50051 --weight 2",
        "deregister greeter 10.0.0.7:50051",
        "watch greeter",
        "register greeter 10.0.0.7:50051"
      })
  void everyCommandFailsWithinTheTimeoutWhenEtcdIsStopped(String command) {
    String[] args = ("--timeout 1s " + command).split(" ");

    Cli.Result r = cli.run(args);

    assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
    assertThat(r.err().lines().toList()).as(r.toString()).hasSize(1);
    assertThat(r.err())
        .startsWith("steelyard: etcd unreachable at " + etcd.endpoints() + ": ")
        // A refused connection fails the call at once with its reason; a call still connecting
        // when --timeout passes says so.
        .containsPattern("within 1000ms|could not be reached for .* \\(UNAVAILABLE");
    assertThat(r.out()).isEmpty();
    assertThat(r.took()).isLessThan(TIMEOUT.plus(SLACK));
  }

  @Test
  void aPeerThatNeverAnswersFailsWithinTheTimeoutToo() {
    String endpoint = "http://127.0.0.1:" + silent.getLocalPort();

    Cli.Result r = Cli.withEndpoints(endpoint).run("--timeout", "1s", "weight", "set", "greeter",
        "10.0.0.7:50051", "3");

    assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
    assertThat(r.err()).startsWith("steelyard: etcd unreachable at " + endpoint + ": ");
    assertThat(r.took()).isLessThan(TIMEOUT.plus(SLACK));
  }
}
