package io.steelyard.it;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.grpc.Server;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.stub.StreamObserver;
import io.steelyard.examples.proto.GreeterGrpc;
import io.steelyard.examples.proto.HelloReply;
import io.steelyard.examples.proto.HelloRequest;
import io.steelyard.registry.EtcdConnection;
import io.steelyard.testkit.EtcdCluster;
import io.steelyard.testkit.FreePorts;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Say why no backend takes calls. The server here is what a Go server with grpc-go's standard
 * health server looks like to a client: it answers the overall service {@code ""} only (a
 * fresh {@link HealthStatusManager}), and it registered itself with a plain pipe value.
 * {@code greeter-client} works with it by default, and when asked about another service it
 * names SERVICE_UNKNOWN for that service instead of a bare timeout.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class HealthCauseIT {

  @RegisterExtension static final EtcdCluster etcd = EtcdCluster.builder().build();

  @TempDir Path dir;
  private Server server;
  private String address;

  @BeforeEach
  void startGoLikeServer() throws Exception {
    server = NettyServerBuilder.forAddress(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
        .addService(new GreeterGrpc.GreeterImplBase() {
          @Override
          public void sayHello(HelloRequest request, StreamObserver<HelloReply> response) {
            response.onNext(HelloReply.newBuilder().setServerAddress(address).build());
            response.onCompleted();
          }
        })
        .addService(new HealthStatusManager().getHealthService()) // "" SERVING, nothing else
        .build().start();
    address = "127.0.0.1:" + ((InetSocketAddress) server.getListenSockets().get(0)).getPort();
  }

  @AfterEach
  void stop() throws InterruptedException {
    server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
  }

  private void register(String service, String value) throws Exception {
    try (Client client = EtcdConnection.of(etcd.endpoints()).connect()) {
      String addr = value.split("\\|")[0];
      client.getKVClient().put(ByteSequence.from("/services/" + service + "/" + addr, UTF_8),
          ByteSequence.from(value, UTF_8)).get(5, TimeUnit.SECONDS);
    }
  }

  /**
   * greeter-client as a child JVM, 4 calls each with {@code deadline}; returns {exit code,
   * stdout, stderr}.
   */
  private String[] greeterClient(String service, String deadline, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(
        Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
        Children.CLIENT, "--endpoints", etcd.endpoints(), "--service", service,
        "--requests", "4", "--deadline", deadline, "--warmup", "0s"));
    cmd.addAll(List.of(args));
    Path out = Files.createTempFile(dir, "client", ".out");
    Path err = Files.createTempFile(dir, "client", ".err");
    Process p = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    assertThat(p.waitFor(90, TimeUnit.SECONDS)).as("greeter-client exits").isTrue();
    return new String[] {Integer.toString(p.exitValue()), Files.readString(out), Files.readString(err)};
  }

  @Test
  void byDefaultTheClientAsksTheOverallStatusWhichEveryStandardHealthServerAnswers() throws Exception {
    register("go-greeter", address + "|1");
    // Generous deadlines: the child JVM resolves and connects within them on a loaded machine.
    String[] r = greeterClient("go-greeter", "20s", "--metrics-port", "0");
    assertThat(r[0]).as("stderr: %s", r[2]).isEqualTo("0");
    assertThat(r[1]).contains(address).contains("4 ok, 0 failed")
        .containsPattern("(?m)^METRICS url=http://127\\.0\\.0\\.1:\\d+/metrics$");
  }

  @Test
  void askedAboutAServiceTheServerDoesNotKnowTheClientNamesServiceUnknownForIt() throws Exception {
    register("go-greeter-named", address + "|1");
    String[] r = greeterClient("go-greeter-named", "8s", "--health-service", "steelyard.examples.Greeter");
    assertThat(r[0]).isEqualTo("1");
    assertThat(r[2])
        .contains("no call succeeded")
        .contains("1 backend known, 0 READY: " + address + " TRANSIENT_FAILURE (health check:"
            + " SERVICE_UNKNOWN for service 'steelyard.examples.Greeter'")
        .contains("--health-service NAME");
    assertThat(Children.JUL_LINE.matcher(r[2]).find()).as("a java.util.logging line: %s", r[2]).isFalse();
  }

  @Test
  void aBackendThatRefusesConnectionsIsNamedAsSuch() throws Exception {
    int dead = FreePorts.one();
    register("dead-greeter", "127.0.0.1:" + dead + "|1");
    String[] r = greeterClient("dead-greeter", "8s");
    assertThat(r[0]).isEqualTo("1");
    assertThat(r[2]).contains("127.0.0.1:" + dead + " TRANSIENT_FAILURE (connection refused)");
  }
}
